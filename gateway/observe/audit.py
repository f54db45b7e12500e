"""Append-only, hash-chained JSONL audit log in the Reef chain format.

Each line is the canonical JSON (``gateway.canonical``) of one entry::

    {"entryHash": H, "event": {"payload": P, "seq": N, "ts": T, "type": K}, "prevHash": H'}

* ``seq`` counts from 1 and ``prevHash`` is ``""`` for the first entry.
* ``entryHash = sha256(bytes.fromhex(prevHash) || canonical_bytes(event))``, as
  Reef's ``hashEntry``; the file is byte-for-byte what Reef's
  ``exportRedactedJsonl`` writes for the same entries, so Reef's chains verify
  here and ours with Reef's ``verifyChain`` (``verify`` is stricter: it also
  checks canonical form and field types).
* ``ts`` is integer **milliseconds** since the Unix epoch. Reef writes integer
  seconds; the chain does not depend on the unit, and a gateway handles many
  requests per second, so the finer unit keeps the order of events readable.
* Unlike Reef, no field is encrypted: callers must never put raw request text
  in a payload (only hashes, fingerprints, decisions, sizes).

Operational limits, by design:

* One writer: the file is locked with ``flock`` while open (POSIX), and
  ``open`` fails if another writer holds it. Several processes or several
  ``AuditLog`` objects on one file would fork the chain.
* Not thread-safe: ``append`` is meant to be called from the event loop
  thread only.
* Without ``fsync=True`` a crash can lose the newest entries (the page cache
  was not written out); the chain stays valid up to the last entry on disk.
* ``keep`` holds an entry until ``flush`` (or the next ``append``), which
  encodes the kept entries in order and writes them in one ``write``. The
  caller decides when to flush; ``seq`` and ``head`` count written entries.
* The log proves internal consistency, not completeness: cutting entries off
  the end leaves a valid shorter chain. Anchor the head elsewhere (signed
  checkpoint, receipts, remote copy) and pass ``expected_head`` /
  ``expected_entries`` to ``verify`` to detect that.

Crash recovery (``open``): an append is a single ``write`` of a complete line,
and canonical JSON never contains a raw newline, so an interrupted append
leaves bytes after the last ``\\n`` and nothing else. ``open`` moves those
bytes to a sidecar file ``<name>.torn-<offset>-<ns>`` (kept for inspection),
truncates them away and logs a warning; the entry was never acknowledged to
the caller. Anything else that is wrong with the last line (bad JSON, bad
hash, not canonical) makes ``open`` raise ``AuditLogError``: appending after a
damaged entry would silently fork the chain, so an operator must look first
(``verify`` reports where the damage is).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from gateway.canonical import CanonicalError, canonical_bytes
from gateway.config.models import Audit

if sys.platform != "win32":
    import fcntl

__all__ = [
    "AuditLog",
    "AuditLogError",
    "VerifyResult",
    "fingerprint_key",
    "verify",
    "worker_path",
]

log = logging.getLogger(__name__)

_HEX64 = re.compile(r"[0-9a-f]{64}")
_ENTRY_KEYS = frozenset({"entryHash", "event", "prevHash"})
_EVENT_KEYS = frozenset({"payload", "seq", "ts", "type"})
# Reef requires ts to be a JS safe integer (Number.isSafeInteger, >= 0).
_MAX_TS = 2**53 - 1
_TAIL_CHUNK = 64 * 1024


class AuditLogError(OSError):
    """The audit log cannot be opened or written safely.

    An OSError so that callers handling file trouble handle this too; the
    underlying OSError, if any, is the ``__cause__``.
    """


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    entries: int  # entries that verified (all of them when ok)
    head: str  # entryHash of the last entry that verified, "" if none
    error: str | None = None
    line: int | None = None  # 1-based line of the first problem, if it is a line


class AuditLog:
    """Writer for one audit log file; see the module docstring for the format."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self._path = Path(path)
        self._fsync = fsync
        self._fd: int | None = None
        self._seq = 0
        self._head = ""
        self._head_raw = b""
        self._failed: str | None = None
        # Entries for the next flush, in order: (type, payload, ts in ms).
        self._kept: list[tuple[str, Mapping[str, object], int]] = []

    @property
    def path(self) -> Path:
        return self._path

    @property
    def seq(self) -> int:
        """seq of the last entry written (0 for an empty log)."""
        return self._seq

    @property
    def head(self) -> str:
        """entryHash of the last entry ("" for an empty log): the value to anchor."""
        return self._head

    @property
    def failed(self) -> str | None:
        """Why the last write failed, if it did; the log refuses appends until reopened."""
        return self._failed

    def open(self) -> None:
        if self._fd is not None:
            raise AuditLogError("audit log is already open")
        self._path.parent.mkdir(parents=True, exist_ok=True)
        # 0o600: entries carry metadata about every proxied request.
        fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _lock(fd, self._path)
            seq, head = _recover(fd, self._path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._seq = seq
        self._head = head
        self._head_raw = bytes.fromhex(head)
        self._failed = None

    def keep(self, type: str, payload: Mapping[str, object], ts: float | None = None) -> None:
        """An entry for the next `flush` (or `append`), which writes it after those kept before.

        Under load the kept entries of a turn of the event loop are encoded
        back to back and written in one ``write``: one at a time between
        other requests' work, an entry's encoding and the kernel's path for a
        small write to a file cost several times what they cost in a row.
        The payload must not change until then. A payload without a
        canonical form is logged and left out when the entries are written.
        """
        self._kept.append((type, payload, self._stamp(type, ts)))

    def append(self, type: str, payload: Mapping[str, object], ts: float | None = None) -> str:
        """Write one entry, after any kept ones, and return its entryHash.

        ``ts`` is in seconds (``time.time()`` style); it is stored as integer
        milliseconds. Raises ``CanonicalError`` for a payload without a
        canonical form, before anything is written.
        """
        ts_ms = self._stamp(type, ts)
        lines, state = self._encode_kept()
        line, state = _encoded(state, type, payload, ts_ms)
        lines.append(line)
        self._kept.clear()
        self._write(lines, state)
        return state[1]

    def flush(self) -> None:
        """Write the kept entries in one ``write`` (and ``fsync`` when configured).

        A failed write leaves ``seq`` and ``head`` those of the last entry
        written, drops the kept entries and raises; `reopen` repairs the file.
        """
        if not self._kept:
            return
        try:
            self._writable()
            lines, state = self._encode_kept()
        finally:
            self._kept.clear()
        if lines:
            self._write(lines, state)

    def _stamp(self, type: str, ts: float | None) -> int:
        """The entry's time in ms, once the log is writable and the type valid."""
        self._writable()
        if not isinstance(type, str) or not type:
            raise ValueError("invalid audit event type")
        return time.time_ns() // 1_000_000 if ts is None else _ts_ms(ts)

    def _writable(self) -> None:
        if self._fd is None:
            raise AuditLogError("audit log is not open")
        if self._failed is not None:
            raise AuditLogError(f"audit log is unusable after a failed write: {self._failed}")

    def _encode_kept(self) -> tuple[list[bytes], tuple[int, str, bytes]]:
        """The kept entries' lines, chained after the last one written, and the chain's state."""
        state = (self._seq, self._head, self._head_raw)
        lines: list[bytes] = []
        for type, payload, ts_ms in self._kept:
            try:
                line, state = _encoded(state, type, payload, ts_ms)
            except CanonicalError as exc:
                # A bug in whoever built the payload; the other entries go on.
                log.error("audit entry of type %r left out: %s", type, exc)
                continue
            lines.append(line)
        return lines, state

    def _write(self, lines: list[bytes], state: tuple[int, str, bytes]) -> None:
        fd = self._fd
        assert fd is not None  # checked by _writable
        try:
            _write_all(fd, lines[0] if len(lines) == 1 else b"".join(lines))
            if self._fsync:
                os.fsync(fd)
        except OSError as exc:
            # Part of the lines may be on disk; continuing would write the
            # next entry after a torn one. open() again repairs the tail.
            self._failed = str(exc)
            raise AuditLogError(f"audit write failed: {exc}") from exc
        self._seq, self._head, self._head_raw = state

    def reopen(self) -> None:
        """Close and open again: after a failed write, this repairs the tail or raises."""
        self.close()
        self.open()

    def close(self) -> None:
        """Write the kept entries, then close; a failed write is logged, not raised."""
        if self._kept:
            try:
                self.flush()
            except AuditLogError as exc:
                log.error("%s; the entries kept for it are lost", exc)
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # also releases the flock

    def __enter__(self) -> AuditLog:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def verify(
    path: Path,
    *,
    expected_head: str | None = None,
    expected_entries: int | None = None,
) -> VerifyResult:
    """Check a whole audit log file.

    Every line must be complete (newline-terminated), valid UTF-8 JSON, in
    canonical form, shaped like an entry, with ``seq`` = its position,
    ``prevHash`` = the previous ``entryHash`` and ``entryHash`` recomputed from
    them. ``expected_head`` / ``expected_entries`` (from an anchor kept
    elsewhere) additionally detect entries cut off the end.
    """
    entries = 0
    head = ""
    try:
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    head = _check_line(raw, entries + 1, head)
                except _BadEntry as exc:
                    return VerifyResult(False, entries, head, str(exc), lineno)
                entries += 1
    except OSError as exc:
        return VerifyResult(False, entries, head, f"cannot read audit log: {exc}", None)
    if expected_entries is not None and entries != expected_entries:
        return VerifyResult(
            False, entries, head, f"expected {expected_entries} entries, found {entries}", None
        )
    if expected_head is not None and head != expected_head:
        return VerifyResult(False, entries, head, "head does not match the expected head", None)
    return VerifyResult(True, entries, head)


def fingerprint_key(settings: Audit, env: Mapping[str, str]) -> bytes:
    """The deployment's fingerprint key: from the environment, else from its key file.

    The file is created (32 random bytes, hex, mode 0600) when missing, so
    fingerprints stay comparable across restarts. Raises ``AuditLogError``
    when it cannot be read or made.
    """
    if settings.fingerprint_key_env:
        value = env.get(settings.fingerprint_key_env, "")
        if value:
            return value.encode("utf-8")
        raise AuditLogError(f"environment variable {settings.fingerprint_key_env} is not set")
    path = settings.key_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _make_key_file(path)
        raw = path.read_bytes().strip()
    except OSError as exc:
        raise AuditLogError(f"cannot read or create the fingerprint key {path}: {exc}") from exc
    try:
        key = bytes.fromhex(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = raw
    if len(key) < 16:
        raise AuditLogError(f"fingerprint key {path} holds fewer than 16 bytes")
    return key


def worker_path(path: Path, worker: int) -> Path:
    """The audit file of one of several workers: ``audit.jsonl`` -> ``audit.w2.jsonl``.

    Each worker process writes its own chain (a chain has one writer); worker 0,
    the only process of ``serve`` without ``--workers``, writes ``path`` itself.
    """
    if worker <= 0:
        return path
    return path.with_name(f"{path.stem}.w{worker}{path.suffix}")


# ---------------------------------------------------------------------------


def _make_key_file(path: Path) -> None:
    """Write a new random key to ``path`` unless it exists, never leaving it half-written.

    The key goes to a private temporary file first and is linked into place, so
    a reader (another worker starting at the same moment) sees no file or the
    whole key, and of two racing writers exactly one wins.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.time_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            _write_all(fd, os.urandom(32).hex().encode("ascii") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _ts_ms(ts: float) -> int:
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        raise ValueError("invalid audit timestamp")
    ms = math.floor(ts * 1000)
    if not 0 <= ms <= _MAX_TS:
        raise ValueError("invalid audit timestamp")
    return ms


def _encoded(
    state: tuple[int, str, bytes], type: str, payload: Mapping[str, object], ts_ms: int
) -> tuple[bytes, tuple[int, str, bytes]]:
    """One entry's line after the chain's ``state`` (seq, head, head's bytes), and the new state."""
    seq, head, head_raw = state
    seq += 1
    event_bytes = canonical_bytes({"payload": payload, "seq": seq, "ts": ts_ms, "type": type})
    hasher = hashlib.sha256(head_raw)
    hasher.update(event_bytes)
    entry_raw = hasher.digest()
    entry_hash = entry_raw.hex()
    # The canonical form of the whole entry, assembled without serialising
    # the event twice: keys sort as entryHash < event < prevHash, and both
    # hashes are plain lowercase hex (tests assert the equality).
    line = b"".join(
        (
            b'{"entryHash":"',
            entry_hash.encode("ascii"),
            b'","event":',
            event_bytes,
            b',"prevHash":"',
            head.encode("ascii"),
            b'"}\n',
        )
    )
    return line, (seq, entry_hash, entry_raw)


def _write_all(fd: int, data: bytes) -> None:
    # A regular-file write is normally complete in one call; loop for the
    # partial writes POSIX still allows (signals, quotas).
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _lock(fd: int, path: Path) -> None:
    if sys.platform == "win32":
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise AuditLogError(f"audit log {path} is in use by another writer") from None


def _recover(fd: int, path: Path) -> tuple[int, str]:
    """(seq, entryHash) of the last entry, after cutting off a torn tail."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0, ""
    last_nl = _rfind_newline(fd, size)
    if last_nl != size - 1:
        start = last_nl + 1
        fragment = _read_at(fd, start, size - start)
        # Unique name: a second crash at the same offset must not overwrite
        # the first fragment.
        sidecar = path.with_name(f"{path.name}.torn-{start}-{time.time_ns()}")
        side_fd = os.open(sidecar, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _write_all(side_fd, fragment)
            os.fsync(side_fd)
        finally:
            os.close(side_fd)
        os.ftruncate(fd, start)
        log.warning(
            "audit log %s: removed %d bytes of an incomplete last entry at offset %d (saved to %s)",
            path,
            len(fragment),
            start,
            sidecar,
        )
        size = start
        if size == 0:
            return 0, ""
    line_start = _rfind_newline(fd, size - 1) + 1
    line = _read_at(fd, line_start, size - 1 - line_start)
    # The position of this line is unknown without reading the whole file, so
    # only its own consistency is checked; verify() checks the full chain.
    try:
        seq, prev, event, entry_hash = _parse_entry(line)
        if (seq == 1) != (prev == ""):
            raise _BadEntry("prevHash does not fit seq")
        if _entry_hash(prev, event) != entry_hash:
            raise _BadEntry("entryHash does not match the entry")
    except _BadEntry as exc:
        raise AuditLogError(
            f"audit log {path}: last entry is damaged ({exc}); run verify"
        ) from None
    return seq, entry_hash


def _read_at(fd: int, offset: int, length: int) -> bytes:
    # lseek + read rather than pread, which Windows lacks; O_APPEND writes
    # ignore the file position anyway.
    os.lseek(fd, offset, os.SEEK_SET)
    parts: list[bytes] = []
    while length > 0:
        chunk = os.read(fd, length)
        if not chunk:
            break
        parts.append(chunk)
        length -= len(chunk)
    return b"".join(parts)


def _rfind_newline(fd: int, end: int) -> int:
    """Offset of the last newline before ``end``, or -1."""
    pos = end
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        idx = _read_at(fd, start, pos - start).rfind(b"\n")
        if idx >= 0:
            return start + idx
        pos = start
    return -1


class _BadEntry(Exception):
    pass


def _check_line(raw: bytes, seq: int, prev: str) -> str:
    """The entryHash of a line that continues the chain; raises _BadEntry."""
    if not raw.endswith(b"\n"):
        raise _BadEntry("incomplete last line (no trailing newline)")
    got_seq, got_prev, event, entry_hash = _parse_entry(raw[:-1])
    if got_seq != seq:
        raise _BadEntry(f"seq is {got_seq}, expected {seq}")
    if got_prev != prev:
        raise _BadEntry("prevHash does not match the previous entryHash")
    if _entry_hash(prev, event) != entry_hash:
        raise _BadEntry("entryHash does not match the entry")
    return entry_hash


def _parse_entry(line: bytes) -> tuple[int, str, dict[str, object], str]:
    """Shape and canonical-form checks for one line without its newline."""
    try:
        obj = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _BadEntry("not valid UTF-8 JSON") from None
    try:
        # Also rejects what json.loads tolerates but the format does not:
        # whitespace, duplicate keys, NaN, 1.0 for 1, escaped non-ASCII.
        canonical = canonical_bytes(obj) == line
    except CanonicalError:
        canonical = False
    if not canonical:
        raise _BadEntry("not in canonical form")
    if not isinstance(obj, dict) or obj.keys() != _ENTRY_KEYS:
        raise _BadEntry("not an audit entry")
    event, prev, entry_hash = obj["event"], obj["prevHash"], obj["entryHash"]
    if not isinstance(event, dict) or event.keys() != _EVENT_KEYS:
        raise _BadEntry("not an audit event")
    seq, ts, etype = event["seq"], event["ts"], event["type"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise _BadEntry("invalid seq")
    if not isinstance(ts, int) or isinstance(ts, bool) or not 0 <= ts <= _MAX_TS:
        raise _BadEntry("invalid ts")
    if not isinstance(etype, str) or not etype:
        raise _BadEntry("invalid type")
    if not isinstance(prev, str) or (prev != "" and _HEX64.fullmatch(prev) is None):
        raise _BadEntry("invalid prevHash")
    if not isinstance(entry_hash, str) or _HEX64.fullmatch(entry_hash) is None:
        # Reef compares hashes as strings, so uppercase hex is a mismatch too.
        raise _BadEntry("invalid entryHash")
    return seq, prev, event, entry_hash


def _entry_hash(prev: str, event: Mapping[str, object]) -> str:
    return hashlib.sha256(bytes.fromhex(prev) + canonical_bytes(event)).hexdigest()
