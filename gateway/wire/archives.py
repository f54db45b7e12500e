"""Archives and compressed files: their members, expanded within bounds.

zip (stored, deflated, bzip2, lzma entries), tar, gzip, bzip2 and xz are
opened with the standard library. One request may expand at most
:data:`MAX_MEMBERS` members and :data:`MAX_EXPANDED` bytes in all, counted
across every archive in it and every nesting level (see :class:`Budget`), and
archives nest at most :data:`MAX_NESTING` deep. Past a bound, or when an
archive cannot be read to its end (truncated, corrupt, encrypted, an
unsupported method, a compressed format the standard library does not read),
the payload is refused: the upstream, or a tool the model runs, may read
what this gateway could not.

Bytes an archive holds outside its members (a zip's comments, the space
before and between entries, data after a gzip stream or a tar's end) are
returned too: they leave the gateway like the rest.
"""

from __future__ import annotations

import bz2
import io
import lzma
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from gateway.wire.base import PayloadError

MAX_MEMBERS = 10_000
MAX_EXPANDED = 64 * 1024 * 1024
MAX_NESTING = 4
# xz and lzma streams declare their dictionary size; a small file could ask
# for gigabytes of it.
_LZMA_MEMORY = 128 * 1024 * 1024


class Unreadable(PayloadError):
    """A payload the gateway cannot inspect in full; the request is refused (400)."""


class Unsupported(Unreadable):
    """An archive or compression format the gateway does not read (415 where it can say so)."""


@dataclass(slots=True)
class Budget:
    """What one request may still expand: members opened and bytes produced."""

    members: int = MAX_MEMBERS
    expanded: int = MAX_EXPANDED

    def member(self) -> None:
        self.members -= 1
        if self.members < 0:
            raise Unreadable(f"archives in the request hold more than {MAX_MEMBERS} members")

    def room(self) -> int:
        """How many more bytes may be produced; ask for one more to detect the overflow."""
        return self.expanded

    def take(self, size: int) -> None:
        self.expanded -= size
        if self.expanded < 0:
            raise Unreadable(
                f"archives in the request expand to more than {MAX_EXPANDED} bytes; "
                "they cannot be inspected"
            )


@dataclass(frozen=True, slots=True)
class Member:
    """A file in an archive (``name`` set; a directory or link has no data), or bytes
    around the files (``name`` empty)."""

    name: str
    data: bytes


_UNSUPPORTED = (
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"Rar!\x1a\x07", "RAR"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"LZIP", "lzip"),
    (b"\x1f\x9d", "compress (.Z)"),
    (b"MSCF\0\0\0\0", "cabinet"),
)
_ZIP_END = b"PK\x05\x06"
_ZIP_END_MIN = 22
_ZIP_COMMENT_MAX = 0xFFFF


def kind(data: bytes) -> str | None:
    """The archive or compression format of ``data``, or None.

    Raises :class:`Unsupported` for formats that are archives but not readable here.
    """
    if data.startswith(b"\x1f\x8b"):
        return "gzip"
    if data.startswith(b"BZh") and data[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bzip2"
    if data.startswith(b"\xfd7zXZ\0"):
        return "xz"
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")) or _zip_end(data) >= 0:
        return "zip"
    if _is_tar(data):
        return "tar"
    for magic, name in _UNSUPPORTED:
        if data.startswith(magic):
            raise Unsupported(
                f"a {name} archive cannot be inspected; send zip, tar, gzip, bzip2 or xz"
            )
    return None


def members(fmt: str, data: bytes, budget: Budget) -> Iterator[Member]:
    """The members of an archive of format ``fmt``, each read within ``budget``."""
    try:
        if fmt == "zip":
            yield from _zip(data, budget)
        elif fmt == "tar":
            yield from _tar(data, budget)
        else:
            yield from _stream(fmt, data, budget)
    except Unreadable:
        raise
    except (
        zipfile.BadZipFile,
        tarfile.TarError,
        zlib.error,
        lzma.LZMAError,
        EOFError,
        OSError,
        ValueError,
        NotImplementedError,
        RuntimeError,
        KeyError,
        IndexError,
        OverflowError,
    ) as exc:
        # Corrupt, truncated or encrypted: what the upstream would make of it is unknown.
        raise Unreadable(f"a {fmt} archive in the request cannot be read: {_reason(exc)}") from exc


def _reason(exc: Exception) -> str:
    # Library messages can quote member names, which can be anything; keep the kind only.
    if isinstance(exc, NotImplementedError):
        return "it uses a compression method the gateway does not read"
    if isinstance(exc, RuntimeError):
        return "a member is encrypted"
    if isinstance(exc, EOFError):
        return "it is truncated"
    return "it is corrupt or truncated"


def _read_bounded(stream: IO[bytes], budget: Budget) -> bytes:
    data = stream.read(budget.room() + 1)
    budget.take(len(data))
    return data


# -- zip --


def _zip_end(data: bytes) -> int:
    """The offset of the end-of-central-directory record whose comment ends the data, or -1."""
    floor = max(0, len(data) - _ZIP_END_MIN - _ZIP_COMMENT_MAX)
    pos = data.rfind(_ZIP_END, floor)
    while pos >= 0:
        comment = int.from_bytes(data[pos + 20 : pos + 22], "little")
        if pos + _ZIP_END_MIN + comment == len(data):
            return pos
        pos = data.rfind(_ZIP_END, floor, pos)
    return -1


def _zip(data: bytes, budget: Budget) -> Iterator[Member]:
    # zipfile reads the whole central directory when it opens the archive: its
    # records are counted first, so a forged directory cannot make it build
    # millions of entries.
    end = _zip_end(data)
    if end < 0:
        raise zipfile.BadZipFile("no end of central directory")
    if data.count(b"PK\x01\x02", 0, end) > budget.members:
        raise Unreadable(f"archives in the request hold more than {MAX_MEMBERS} members")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        covered: list[tuple[int, int]] = [(archive.start_dir, len(data))]
        for info in infos:
            budget.member()
            if info.comment:
                yield Member("", info.comment)
            if info.flag_bits & 0x1:
                raise RuntimeError("encrypted member")
            with archive.open(info) as stream:
                content = _read_bounded(stream, budget)
            covered.append(_zip_extent(data, info))
            yield Member(info.filename or "?", content)
        if archive.comment:
            yield Member("", archive.comment)
    yield from _gaps(data, covered)


def _zip_extent(data: bytes, info: zipfile.ZipInfo) -> tuple[int, int]:
    start = info.header_offset
    name_len = int.from_bytes(data[start + 26 : start + 28], "little")
    extra_len = int.from_bytes(data[start + 28 : start + 30], "little")
    return start, start + 30 + name_len + extra_len + info.compress_size


def _gaps(data: bytes, covered: list[tuple[int, int]]) -> Iterator[Member]:
    """The bytes no member or directory accounts for: a prefix, gaps, descriptors."""
    pos = 0
    for start, end in sorted(covered):
        if start > pos:
            yield Member("", data[pos:start])
        pos = max(pos, end)


# -- tar --


def _is_tar(data: bytes) -> bool:
    if len(data) < tarfile.BLOCKSIZE:
        return False
    block = data[: tarfile.BLOCKSIZE]
    if block == tarfile.NUL * tarfile.BLOCKSIZE:
        return False
    try:
        # Checks the header checksum: old v7 archives have no "ustar" magic.
        tarfile.TarInfo.frombuf(block, "utf-8", "replace")
    except tarfile.HeaderError:
        return False
    return True


def _tar(data: bytes, budget: Budget) -> Iterator[Member]:
    with tarfile.open(
        fileobj=io.BytesIO(data), mode="r:", encoding="utf-8", errors="replace"
    ) as tar:
        while True:
            info = tar.next()
            if info is None:
                break
            budget.member()
            extra = [info.linkname, *info.pax_headers.values()]
            if any(extra):
                yield Member("", "\n".join(t for t in extra if t).encode())
            content = b""
            if info.isreg():
                stream = tar.extractfile(info)
                assert stream is not None
                with stream:
                    content = _read_bounded(stream, budget)
            yield Member(info.name or "?", content)
        end = tar.offset
    # After the end-of-archive blocks: a second archive `tar -i` would read, or anything.
    rest = data[end:].lstrip(b"\0")
    if rest:
        yield Member("", rest)


# -- gzip, bzip2, xz: one compressed stream, or several concatenated --


def _stream(fmt: str, data: bytes, budget: Budget) -> Iterator[Member]:
    names: list[str] = []
    out: list[bytes] = []
    rest = data
    while rest and (fmt != "gzip" or rest.startswith(b"\x1f\x8b")):
        if fmt == "gzip":
            names.extend(_gzip_names(rest))
        chunk, done, rest = _decompress(fmt, rest, budget.room() + 1)
        budget.take(len(chunk))
        if not done:
            raise EOFError("truncated stream")
        out.append(chunk)
        if fmt == "xz":
            # Streams may be followed by zero padding in multiples of four bytes.
            rest = rest.lstrip(b"\0")
    budget.member()
    yield Member("\n".join(names) or fmt, b"".join(out))
    if rest:
        # The gzip tool ignores trailing garbage; it still leaves the gateway.
        yield Member("", rest)


def _decompress(fmt: str, data: bytes, limit: int) -> tuple[bytes, bool, bytes]:
    """One stream: (at most ``limit`` bytes of output, whether it ended, the bytes after it)."""
    if fmt == "gzip":
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return inflater.decompress(data, limit), inflater.eof, inflater.unused_data
    if fmt == "bzip2":
        bunzip = bz2.BZ2Decompressor()
        return bunzip.decompress(data, limit), bunzip.eof, bunzip.unused_data
    unxz = lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=_LZMA_MEMORY)
    return unxz.decompress(data, limit), unxz.eof, unxz.unused_data


def _gzip_names(data: bytes) -> list[str]:
    """The original file name and comment a gzip header may carry (RFC 1952 2.3.1)."""
    flags = data[3] if len(data) > 3 else 0
    pos = 10
    if flags & 0x04:  # FEXTRA
        pos += 2 + int.from_bytes(data[pos : pos + 2], "little")
    found = []
    for flag in (0x08, 0x10):  # FNAME, FCOMMENT
        if flags & flag:
            end = data.find(b"\0", pos)
            if end < 0:
                break
            found.append(data[pos:end].decode("latin-1"))
            pos = end + 1
    return found


def inflate(data: bytes, budget: Budget) -> bytes:
    """A zlib stream (PNG zTXt/iTXt, PDF FlateDecode) decompressed within ``budget``."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, budget.room() + 1)
    except zlib.error as exc:
        raise Unreadable("compressed text in the request cannot be read") from exc
    budget.take(len(out))
    return out
