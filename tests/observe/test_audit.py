"""The hash-chained audit log: writer, recovery, verify, and Reef's chains."""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.canonical import CanonicalError, canonical_bytes, canonical_str, sha256_hex
from gateway.observe import audit as audit_mod
from gateway.observe.audit import AuditLog, AuditLogError, VerifyResult, verify
from tests.vectors import load_cases

AUDIT_CASES = load_cases("audit.json")
CHAINS = [c for c in AUDIT_CASES if c["kind"] == "chain"]
BROKEN_CHAINS = [c for c in AUDIT_CASES if c["kind"] == "verify_chain"]

PAYLOAD = {
    "method": "POST",
    "upstream": "openai",
    "path": "/v1/responses",
    "decision": "allow",
    "findings": [{"kind": "aws_access_key", "fingerprint": "0123456789abcdef"}],
    "latency_ms": 12.345,
    "team": "core",
}


def _write(path: Path, n: int, start_ts: float = 1_784_131_200.0) -> list[str]:
    with AuditLog(path) as log:
        return [
            log.append("request", {**PAYLOAD, "i": i}, ts=start_ts + i * 0.25) for i in range(n)
        ]


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _assert_ok(result: VerifyResult, entries: int, head: str) -> None:
    assert result == VerifyResult(True, entries, head, None, None)


# ---------------------------------------------------------------------------
# Writing


def test_append_and_verify(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "audit.jsonl"
    hashes = _write(path, 25)
    _assert_ok(verify(path), 25, hashes[-1])
    entries = [json.loads(line) for line in _lines(path)]
    assert [e["event"]["seq"] for e in entries] == list(range(1, 26))
    assert entries[0]["prevHash"] == ""
    for prev, entry in itertools.pairwise(entries):
        assert entry["prevHash"] == prev["entryHash"]
    assert [e["entryHash"] for e in entries] == hashes


def test_line_format_is_canonical_and_hash_is_reef_formula(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _write(path, 3)
    prev = ""
    for raw in _lines(path):
        assert raw.endswith(b"\n")
        entry = json.loads(raw)
        # The line is assembled by concatenation; it must still be canonical.
        assert raw[:-1] == canonical_bytes(entry)
        expected = sha256_hex(bytes.fromhex(prev) + canonical_bytes(entry["event"]))
        assert entry["entryHash"] == expected
        prev = expected


def test_event_fields(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.append("request", {"a": 1}, ts=1_784_131_200.9999)
        log.append("request", {"a": 2})
    first, second = (json.loads(line)["event"] for line in _lines(path))
    assert first == {"seq": 1, "ts": 1_784_131_200_999, "type": "request", "payload": {"a": 1}}
    assert isinstance(second["ts"], int)
    assert second["ts"] > 1_600_000_000_000  # milliseconds, from the clock


def test_head_and_seq_properties(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.open()
    assert (log.seq, log.head) == (0, "")
    h = log.append("x", {})
    assert (log.seq, log.head) == (1, h)
    log.close()
    log.close()  # idempotent


def test_reopen_continues_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    first = _write(path, 3)
    log = AuditLog(path)
    log.open()
    assert (log.seq, log.head) == (3, first[-1])
    fourth = log.append("request", {"after": "restart"})
    log.close()
    _assert_ok(verify(path), 4, fourth)
    last = json.loads(_lines(path)[-1])
    assert last["event"]["seq"] == 4
    assert last["prevHash"] == first[-1]


def test_open_empty_file_starts_fresh(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.touch()
    h = _write(path, 1)
    _assert_ok(verify(path), 1, h[0])


def test_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _write(path, 1)
    assert path.stat().st_mode & 0o077 == 0


def test_fsync_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(os, "fsync", calls.append)
    with AuditLog(tmp_path / "a.jsonl", fsync=True) as log:
        log.append("x", {})
        log.append("x", {})
    with AuditLog(tmp_path / "b.jsonl") as log:
        log.append("x", {})
    assert len(calls) == 2
    # Entries written together are synced together, before the flush returns.
    with AuditLog(tmp_path / "c.jsonl", fsync=True) as log:
        for _ in range(3):
            log.keep("x", {})
        log.flush()
        assert len(calls) == 3


def test_bad_payload_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        h1 = log.append("x", {"ok": 1})
        with pytest.raises(CanonicalError):
            log.append("x", {"bad": float("nan")})
        with pytest.raises(CanonicalError):
            log.append("x", {"bad": b"bytes"})
        with pytest.raises(ValueError, match="type"):
            log.append("", {})
        for ts in (float("nan"), float("inf"), -1.0):
            with pytest.raises(ValueError, match="timestamp"):
                log.append("x", {}, ts=ts)
        assert (log.seq, log.head) == (1, h1)
        h2 = log.append("x", {"ok": 2})
    _assert_ok(verify(path), 2, h2)


def test_append_requires_open(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    with pytest.raises(AuditLogError, match="not open"):
        log.append("x", {})
    log.open()
    with pytest.raises(AuditLogError, match="already open"):
        log.open()
    log.close()
    with pytest.raises(AuditLogError, match="not open"):
        log.append("x", {})


def test_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as first:
        first.append("x", {})
        with pytest.raises(AuditLogError, match="in use"):
            AuditLog(path).open()
    # Released on close.
    with AuditLog(path) as again:
        again.append("x", {})
    assert verify(path).entries == 2


def test_failed_write_poisons_until_reopen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.open()
    good = log.append("x", {"n": 1})
    real_write = os.write

    def torn_write(fd: int, data: bytes | memoryview) -> int:
        real_write(fd, bytes(data)[:10])  # part of the line reaches the disk
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", torn_write)
    with pytest.raises(AuditLogError, match="write failed"):
        log.append("x", {"n": 2})
    monkeypatch.setattr(os, "write", real_write)
    # Writing after the torn bytes would corrupt the file.
    with pytest.raises(AuditLogError, match="unusable"):
        log.append("x", {"n": 3})
    log.close()

    log.open()  # repairs the tail
    assert (log.seq, log.head) == (1, good)
    h = log.append("x", {"n": 2})
    log.close()
    _assert_ok(verify(path), 2, h)


def test_partial_os_write_is_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write

    def short_write(fd: int, data: bytes | memoryview) -> int:
        return real_write(fd, bytes(data)[:7])

    monkeypatch.setattr(os, "write", short_write)
    path = tmp_path / "audit.jsonl"
    hashes = _write(path, 3)
    _assert_ok(verify(path), 3, hashes[-1])


# ---------------------------------------------------------------------------
# Crash recovery


def test_torn_last_line_is_cut_and_saved(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "audit.jsonl"
    hashes = _write(path, 3)
    intact = path.stat().st_size
    fragment = b'{"entryHash":"0123456789abcdef'
    with path.open("ab") as fh:
        fh.write(fragment)
    assert verify(path).ok is False

    log = AuditLog(path)
    with caplog.at_level(logging.WARNING, logger="gateway.observe.audit"):
        log.open()
    assert "incomplete last entry" in caplog.text
    assert path.stat().st_size == intact
    (sidecar,) = tmp_path.glob(f"audit.jsonl.torn-{intact}-*")
    assert sidecar.read_bytes() == fragment
    assert sidecar.stat().st_mode & 0o077 == 0
    assert (log.seq, log.head) == (3, hashes[-1])
    h = log.append("x", {})
    log.close()
    _assert_ok(verify(path), 4, h)


def test_torn_only_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"entryHash":"ab')
    with AuditLog(path) as log:
        assert (log.seq, log.head) == (0, "")
        h = log.append("x", {})
    _assert_ok(verify(path), 1, h)


def test_torn_zero_filled_tail(tmp_path: Path) -> None:
    # What some filesystems leave after a crash without fsync.
    path = tmp_path / "audit.jsonl"
    hashes = _write(path, 2)
    with path.open("ab") as fh:
        fh.write(b"\x00" * 4096)
    with AuditLog(path) as log:
        assert log.head == hashes[-1]


def test_long_last_line_is_found(tmp_path: Path) -> None:
    # Longer than the backwards read chunk.
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.append("x", {"blob": "a" * 10})
        big = log.append("x", {"blob": "b" * 200_000})
    with AuditLog(path) as log:
        assert (log.seq, log.head) == (2, big)


def _rehash(entry: dict[str, Any]) -> bytes:
    entry["entryHash"] = audit_mod._entry_hash(entry["prevHash"], entry["event"])
    return canonical_bytes(entry) + b"\n"


def _other_hash(entry: dict[str, Any]) -> bytes:
    entry["entryHash"] = sha256_hex(b"something else")
    return canonical_bytes(entry) + b"\n"


def _edit_payload(entry: dict[str, Any]) -> bytes:
    entry["event"]["payload"]["decision"] = "deny"
    return canonical_bytes(entry) + b"\n"


def _first_with_prev(entry: dict[str, Any]) -> bytes:
    # Self-consistent hash, but seq 1 cannot follow anything.
    entry["event"]["seq"] = 1
    return _rehash(entry)


DAMAGE: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "other_hash": _other_hash,
    "edited_payload": _edit_payload,
    "first_with_prev": _first_with_prev,
    "not_json": lambda _: b"garbage\n",
    "not_canonical": lambda e: json.dumps(e).encode() + b"\n",
    "empty_line": lambda e: canonical_bytes(e) + b"\n\n",
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_last_line_refuses_to_open(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "audit.jsonl"
    _write(path, 3)
    lines = _lines(path)
    path.write_bytes(b"".join(lines[:-1]) + DAMAGE[damage](json.loads(lines[-1])))
    before = path.read_bytes()
    with pytest.raises(AuditLogError, match="damaged"):
        AuditLog(path).open()
    assert path.read_bytes() == before  # nothing repaired or appended


# ---------------------------------------------------------------------------
# verify


def test_every_single_byte_edit_is_reported_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _write(path, 5)
    lines = _lines(path)
    target = 2  # 0-based: the third line
    line = lines[target]
    for pos in range(len(line) - 1):  # the newline is covered by the split tests
        replacement = b"a" if line[pos : pos + 1] != b"a" else b"b"
        edited = line[:pos] + replacement + line[pos + 1 :]
        path.write_bytes(b"".join([*lines[:target], edited, *lines[target + 1 :]]))
        result = verify(path)
        assert result.ok is False, pos
        assert result.line == target + 1, (pos, result)
        assert result.entries == target


def test_unicode_payload_byte_edit(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.append("x", {"note": "é中\U0001f600"})
        log.append("x", {"note": "ok"})
    data = bytearray(path.read_bytes())
    data[data.index("中".encode())] ^= 0x01
    path.write_bytes(bytes(data))
    assert verify(path).line == 1


def test_deleted_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _write(path, 5)
    lines = _lines(path)
    path.write_bytes(b"".join(lines[:2] + lines[3:]))
    result = verify(path)
    assert (result.ok, result.line, result.entries) == (False, 3, 2)
    assert result.error is not None
    assert "seq" in result.error


def test_deleted_first_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _write(path, 3)
    path.write_bytes(b"".join(_lines(path)[1:]))
    assert (verify(path).ok, verify(path).line) == (False, 1)


def test_reordered_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _write(path, 5)
    lines = _lines(path)
    lines[1], lines[3] = lines[3], lines[1]
    path.write_bytes(b"".join(lines))
    result = verify(path)
    assert (result.ok, result.line) == (False, 2)


def test_renumbered_line_is_caught_by_hash(tmp_path: Path) -> None:
    # Deleting a line and renumbering seq still breaks prevHash / entryHash.
    path = tmp_path / "audit.jsonl"
    _write(path, 4)
    lines = _lines(path)
    entry = json.loads(lines[2])
    entry["event"]["seq"] = 2
    path.write_bytes(lines[0] + canonical_bytes(entry) + b"\n")
    result = verify(path)
    assert (result.ok, result.line) == (False, 2)


def test_verify_truncated_last_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    hashes = _write(path, 3)
    data = path.read_bytes()
    path.write_bytes(data[:-1])  # only the newline missing
    result = verify(path)
    assert result.ok is False
    assert result.line == 3
    assert result.entries == 2
    assert result.head == hashes[1]
    assert result.error is not None
    assert "incomplete" in result.error


def test_verify_expected_anchor(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    hashes = _write(path, 4)
    _assert_ok(verify(path, expected_head=hashes[-1], expected_entries=4), 4, hashes[-1])
    # A chain cut after entry 3 is internally fine; only the anchor shows it.
    path.write_bytes(b"".join(_lines(path)[:3]))
    _assert_ok(verify(path), 3, hashes[2])
    assert verify(path, expected_entries=4).ok is False
    assert verify(path, expected_head=hashes[-1]).ok is False


def test_verify_empty_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.touch()
    _assert_ok(verify(path), 0, "")
    missing = verify(tmp_path / "nope.jsonl")
    assert missing.ok is False
    assert missing.line is None


@pytest.mark.parametrize(
    ("where", "key", "value", "reason"),
    [
        ("event", "seq", True, "seq"),
        ("event", "ts", -1, "ts"),
        ("event", "ts", 1.5, "ts"),
        ("event", "ts", 2**53, "ts"),
        ("event", "type", "", "type"),
        ("event", "extra", 1, "event"),
        ("entry", "extra", 1, "entry"),
        ("entry", "entryHash", "UPPER", "entryHash"),
        ("entry", "prevHash", "00", "prevHash"),
    ],
)
def test_verify_shape_errors(
    tmp_path: Path, where: str, key: str, value: object, reason: str
) -> None:
    path = tmp_path / "audit.jsonl"
    _write(path, 1)
    entry = json.loads(path.read_bytes())
    target = entry["event"] if where == "event" else entry
    # "UPPER": the right hash in uppercase hex, which Reef also rejects.
    target[key] = entry["entryHash"].upper() if value == "UPPER" else value
    path.write_bytes(canonical_bytes(entry) + b"\n")
    result = verify(path)
    assert (result.ok, result.line) == (False, 1)
    assert result.error is not None
    assert reason in result.error


@pytest.mark.parametrize(
    "line",
    [
        b'{"entryHash": "x"}',  # whitespace
        b'{"a":1,"a":1}',  # duplicate key
        b'{"a":NaN}',
        b'{"a":1.0}',
        b'{"a":"\\u00e9"}',  # escaped non-ASCII
        b'{"a":"\xff"}',  # not UTF-8
        b"[]",
    ],
)
def test_verify_rejects_non_canonical_lines(tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(line + b"\n")
    assert (verify(path).ok, verify(path).line) == (False, 1)


# ---------------------------------------------------------------------------
# Reef's chains (audit.json)


def _jsonl(entries: list[dict[str, Any]]) -> bytes:
    return b"".join(canonical_bytes(e) + b"\n" for e in entries)


@pytest.mark.parametrize("case", CHAINS, ids=[c["id"] for c in CHAINS])
def test_reef_chain_hashes(case: dict[str, Any]) -> None:
    # Hashes cover the stored (encrypted) events, so the plain chain formula
    # reproduces them from the stored form.
    prev = ""
    for entry, pre in zip(case["entries"], case["entry_hash_preimages"], strict=True):
        event = entry["event"]
        assert canonical_str(event) == pre["event_canonical"]
        assert entry["prevHash"] == pre["prevHash"] == prev
        assert audit_mod._entry_hash(prev, event) == entry["entryHash"]
        prev = entry["entryHash"]
    assert prev == case["verifyChain_with_expected"]["expected"]["head"]
    assert case["verifyChain"] is True


@pytest.mark.parametrize("case", CHAINS, ids=[c["id"] for c in CHAINS])
def test_reef_chain_file_is_our_format(tmp_path: Path, case: dict[str, Any]) -> None:
    # Reef's exportRedactedJsonl output is byte-for-byte our file format.
    assert _jsonl(case["entries"]).decode("utf-8") == case["export_redacted_jsonl"]
    path = tmp_path / "reef.jsonl"
    path.write_text(case["export_redacted_jsonl"], encoding="utf-8", newline="")
    expected = case["verifyChain_with_expected"]["expected"]
    _assert_ok(
        verify(path, expected_head=expected["head"], expected_entries=expected["length"]),
        expected["length"],
        expected["head"],
    )
    assert case["checkpoint"]["head"] == expected["head"]
    # Our writer continues a Reef chain.
    with AuditLog(path) as log:
        assert (log.seq, log.head) == (expected["length"], expected["head"])
        h = log.append("request", {"continued": True})
    _assert_ok(verify(path), expected["length"] + 1, h)


# Where each tampering first shows.
BROKEN_LINE = {"audit-006": 2, "audit-007": 4, "audit-008": 3, "audit-009": 1, "audit-013": 1}


@pytest.mark.parametrize("case", BROKEN_CHAINS, ids=[c["id"] for c in BROKEN_CHAINS])
def test_reef_broken_chains_are_rejected(tmp_path: Path, case: dict[str, Any]) -> None:
    assert case["verifyChain"] is False
    path = tmp_path / "broken.jsonl"
    path.write_bytes(_jsonl(case["entries"]))
    expected = case.get("expected_arg") or {}
    result = verify(
        path, expected_head=expected.get("head"), expected_entries=expected.get("length")
    )
    assert result.ok is False
    if case["id"] in BROKEN_LINE:
        assert result.line == BROKEN_LINE[case["id"]]
    if "expected_arg" in case:
        # Truncation is only visible against an anchor.
        assert verify(path).ok is True


def test_reef_vectors_have_both_kinds() -> None:
    assert len(CHAINS) >= 3
    assert len(BROKEN_CHAINS) >= 6


def test_payload_values_round_trip_through_verify(tmp_path: Path) -> None:
    # verify re-parses lines with json.loads; every canonical value must come
    # back to the same canonical bytes.
    path = tmp_path / "audit.jsonl"
    payload: dict[str, object] = {
        "big": 10**20,
        "rounded": 2**53 + 1,
        "exp": 1e21,
        "small": 1e-7,
        "tiny": 5e-324,
        "negzero": -0.0,
        "integral": 3.0,
        "lone": "\ud800x\udfff",
        "pair": "\ud83d\ude00",
        "text": 'é中\U0001f600\u2028\x00\n"\\',
        "nested": [{"\U0001f600": 1, "\uff01": 2}, (1, None, True)],
    }
    with AuditLog(path) as log:
        log.append("x", payload)
        h = log.append("x", {})
    _assert_ok(verify(path), 2, h)
    with AuditLog(path) as log:
        assert log.head == h


# ---------------------------------------------------------------------------
# Kept entries: encoded and written together


def _counting_writes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    writes: list[bytes] = []
    real = audit_mod._write_all

    def counted(fd: int, data: bytes) -> None:
        writes.append(data)
        real(fd, data)

    monkeypatch.setattr(audit_mod, "_write_all", counted)
    return writes


def test_kept_entries_are_written_together_by_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.jsonl"
    same = tmp_path / "same.jsonl"
    _write(same, 3)
    writes = _counting_writes(monkeypatch)
    with AuditLog(path) as log:
        for i in range(3):
            log.keep("request", {**PAYLOAD, "i": i}, ts=1_784_131_200.0 + i * 0.25)
        # Nothing is written, and the chain does not count them, until the flush.
        assert path.read_bytes() == b""
        assert (log.seq, log.head) == (0, "")
        log.flush()
        assert len(writes) == 1
        assert (log.seq, log.head) == (3, verify(path).head)
        log.flush()  # nothing kept: nothing written
        assert len(writes) == 1
    # Byte for byte what appending them one by one writes.
    assert path.read_bytes() == same.read_bytes()


def test_an_append_writes_the_kept_entries_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.jsonl"
    writes = _counting_writes(monkeypatch)
    with AuditLog(path) as log:
        log.keep("request", {"i": 0})
        log.keep("request", {"i": 1})
        head = log.append("tunnel", {"i": 2})
        assert len(writes) == 1
        assert head == log.head
    events = [json.loads(line)["event"] for line in _lines(path)]
    assert [(e["seq"], e["type"], e["payload"]["i"]) for e in events] == [
        (1, "request", 0),
        (2, "request", 1),
        (3, "tunnel", 2),
    ]
    _assert_ok(verify(path), 3, head)


def test_a_kept_entry_without_a_canonical_form_is_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.keep("request", {"i": 0})
        log.keep("request", {"i": float("nan")})
        log.keep("request", {"i": 2})
        with caplog.at_level(logging.ERROR, logger=audit_mod.__name__):
            log.flush()
        assert log.seq == 2
        # An append's own payload is refused before anything is written.
        log.keep("request", {"i": 3})
        with pytest.raises(CanonicalError):
            log.append("request", {"i": float("inf")})
        assert log.seq == 2
        log.flush()
    assert "left out" in caplog.text
    assert [json.loads(line)["event"]["payload"]["i"] for line in _lines(path)] == [0, 2, 3]
    _assert_ok(verify(path), 3, verify(path).head)


def test_a_failed_flush_drops_the_kept_entries_and_reopen_repairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        first = log.append("request", {"i": 0})
        real = audit_mod._write_all

        def torn(fd: int, data: bytes) -> None:
            real(fd, data[:10])
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(audit_mod, "_write_all", torn)
        log.keep("request", {"i": 1})
        log.keep("request", {"i": 2})
        with pytest.raises(AuditLogError):
            log.flush()
        assert (log.seq, log.head) == (1, first)
        with pytest.raises(AuditLogError):
            log.keep("request", {"i": 3})
        monkeypatch.setattr(audit_mod, "_write_all", real)
        log.reopen()
        log.keep("request", {"i": 4})
        log.flush()
    assert [json.loads(line)["event"]["payload"]["i"] for line in _lines(path)] == [0, 4]
    assert verify(path).ok


def test_close_writes_the_kept_entries(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.open()
    log.keep("request", {"i": 0})
    log.close()
    assert verify(path).entries == 1
    with pytest.raises(AuditLogError):
        log.keep("request", {"i": 1})
