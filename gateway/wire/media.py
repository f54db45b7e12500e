"""Known binary media: a real image, audio, video or PDF file, told from bytes that start like one.

A payload is left unscanned as media only when three things hold:

- its magic number is one of the formats the model APIs take: PNG, JPEG, GIF,
  WebP, PDF, WAV, MP3, FLAC, Ogg, MP4/M4A/MOV/HEIC/AVIF (ISO BMFF) or
  WebM/Matroska;
- every declared type it comes with (a MIME type, an audio ``format``, a file
  name) names that same format; a generic label (``application/octet-stream``)
  or none at all says nothing either way;
- its structure holds together as far as it can be checked without decoding
  the media data: PNG chunks chain to ``IEND``, JPEG segments chain to the
  first scan and an ``EOI`` ends the image, GIF blocks to the trailer, RIFF and ISO BMFF
  boxes tile the file, every MPEG audio frame header and Ogg page chains to the
  next, EBML elements nest, a PDF ends in ``startxref``/``%%EOF``.

A ``%PDF-`` or PNG signature followed by a ``.env`` fails the last check and is
scanned like any other bytes. What the structure says is not media data
(metadata chunks, comments, EXIF/XMP, ID3 tags, PDF objects outside streams,
bytes after the end of the file) is returned to be scanned as well: text
hidden there reaches the upstream like any other. The media data itself
(pixels, samples, compressed streams) is not read: text hidden inside a
well-formed stream is steganography, out of reach of any scan.

The walkers read through a :class:`Source`, so a base64 payload is decoded
only where a header is read: a 10 MB PNG costs a few hundred chunk headers.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from gateway.wire.archives import Budget, Unreadable, inflate


class Source(Protocol):
    """Payload bytes, read by range; ``whole`` decodes everything."""

    @property
    def size(self) -> int: ...

    def read(self, start: int, length: int) -> bytes: ...

    def whole(self) -> bytes: ...


class BytesSource:
    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, start: int, length: int) -> bytes:
        return self._data[start : start + length]

    def whole(self) -> bytes:
        return self._data


class Base64Source:
    """Base64 in ``b64[start:end]``, checked to be one alphabet without breaks or padding.

    Each read decodes only the 4-character groups that cover it; the text is
    never copied, so a data URL is read in place.
    """

    __slots__ = ("_b64", "_end", "_size", "_start", "_whole")

    def __init__(self, b64: bytes, start: int = 0, end: int | None = None) -> None:
        self._b64 = b64
        self._start = start
        self._end = len(b64) if end is None else end
        chars = self._end - start
        if chars % 4 == 1:
            raise ValueError("a base64 text cannot be 1 more than a multiple of 4 long")
        self._size = chars // 4 * 3 + max(chars % 4 - 1, 0)
        self._whole: bytes | None = None

    @property
    def size(self) -> int:
        return self._size

    def read(self, start: int, length: int) -> bytes:
        if self._whole is not None:
            return self._whole[start : start + length]
        end = min(start + length, self._size)
        if start >= end:
            return b""
        first, last = start // 3, (end + 2) // 3
        chars = self._b64[self._start + first * 4 : min(self._start + last * 4, self._end)]
        raw = binascii.a2b_base64(chars + b"=" * (-len(chars) % 4))
        skip = start - first * 3
        return raw[skip : skip + end - start]

    def whole(self) -> bytes:
        if self._whole is None:
            end = self._end
            missing = -(end - self._start) % 4
            if self._b64[end : end + missing] == b"=" * missing:
                # The padding that was sent: decoded in place, without a copy.
                chars: bytes | memoryview = memoryview(self._b64)[self._start : end + missing]
            else:
                chars = self._b64[self._start : end] + b"=" * missing
            self._whole = binascii.a2b_base64(chars)
        return self._whole


# -- declared types --

_KINDS: dict[str, tuple[str, ...]] = {
    "png": ("image/png", "image/apng", "image/x-png", "png", "apng"),
    "jpeg": ("image/jpeg", "image/jpg", "image/pjpeg", "jpg", "jpeg", "jpe", "jfif"),
    "gif": ("image/gif", "gif"),
    "webp": ("image/webp", "webp"),
    "pdf": ("application/pdf", "application/x-pdf", "pdf"),
    "wav": ("audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave", "wav", "wave"),
    "mp3": ("audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg-3", "mp3", "mpga", "mpeg"),
    "flac": ("audio/flac", "audio/x-flac", "flac"),
    "ogg": ("audio/ogg", "audio/opus", "video/ogg", "application/ogg", "ogg", "oga", "opus"),
    "bmff": (
        "video/mp4",
        "audio/mp4",
        "audio/m4a",
        "audio/x-m4a",
        "video/quicktime",
        "video/3gpp",
        "audio/3gpp",
        "image/heic",
        "image/heif",
        "image/avif",
        "mp4",
        "m4a",
        "m4v",
        "mov",
        "3gp",
        "heic",
        "heif",
        "avif",
    ),
    "ebml": (
        "video/webm",
        "audio/webm",
        "video/x-matroska",
        "audio/x-matroska",
        "webm",
        "mkv",
        "mka",
    ),
}
_LABELS = {label: kind for kind, labels in _KINDS.items() for label in labels}
# Labels that say only "bytes": they agree with any format.
_GENERIC = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "application/binary", "base64"}
)
_UNKNOWN = "?"
_TOP_LEVEL_TYPES = frozenset(
    {"application", "audio", "binary", "font", "image", "message", "model", "text", "video"}
)


def declared_kind(declared: str | None) -> str | None:
    """The format a MIME type, audio format or file name names; None if it names none.

    A label that names something else (``text/plain``, ``notes.env``) is ``"?"``.
    """
    if declared is None:
        return None
    label = declared.strip().lower()
    mime = label.split(";", 1)[0].strip()
    if mime.partition("/")[0] in _TOP_LEVEL_TYPES:
        return None if mime in _GENERIC else _LABELS.get(mime, _UNKNOWN)
    if label in _GENERIC:
        return None
    # A file name (an archive member's may be a path) names its extension's
    # format; a bare word is a format (``wav``), or a name without an
    # extension (``blob``, as browsers call uploads), which says nothing.
    name = label.rpartition("/")[2]
    if "." not in name:
        return _LABELS.get(name)
    return _LABELS.get(name.rpartition(".")[2], _UNKNOWN)


def agrees(kind: str, declared: Sequence[str | None]) -> bool:
    return all(declared_kind(label) in (None, kind) for label in declared)


# -- recognising the format --


def sniff(head: bytes) -> str | None:
    """The format whose magic number ``head`` (the first 16 bytes or more) starts with."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "webp"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith(b"ID3") or _mpeg_frame_size(head[:4]) is not None:
        return "mp3"
    if head.startswith(b"fLaC"):
        return "flac"
    if head.startswith(b"OggS"):
        return "ogg"
    if head[4:8] == b"ftyp":
        return "bmff"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "ebml"
    return None


def inspect(
    source: Source, declared: Sequence[str | None] = (), budget: Budget | None = None
) -> list[bytes] | None:
    """The parts of a real media file still to scan, or None when it is not one.

    None means: not a known format, a declared type that names another, or a
    structure that does not hold. ``[]`` is a media file with nothing but media
    data in it. Compressed text in it (PNG ``zTXt``) is expanded within ``budget``.
    """
    kind = sniff(source.read(0, 16))
    if kind is None or not agrees(kind, declared):
        return None
    try:
        return _WALKERS[kind](source, budget or Budget())
    except Unreadable:
        raise
    except (IndexError, ValueError):
        # A header cut short or a length past the end: not a real file.
        return None


def _u16be(b: bytes, i: int = 0) -> int:
    return int.from_bytes(b[i : i + 2], "big")


def _u32be(b: bytes, i: int = 0) -> int:
    return int.from_bytes(b[i : i + 4], "big")


def _u32le(b: bytes, i: int = 0) -> int:
    return int.from_bytes(b[i : i + 4], "little")


# -- PNG: chunks of length, type, data, CRC, from IHDR to IEND --

_PNG_DATA = frozenset({b"IDAT", b"fdAT"})


def _png(src: Source, budget: Budget) -> list[bytes] | None:
    size, pos, out = src.size, 8, []
    first = True
    while True:
        head = src.read(pos, 8)
        if len(head) < 8:
            return None
        length, kind = _u32be(head), head[4:8]
        end = pos + 12 + length
        if length > 0x7FFFFFFF or not kind.isalpha() or end > size:
            return None
        if first and (kind != b"IHDR" or length != 13):
            return None
        first = False
        if kind == b"IEND":
            if length:
                return None
            if end < size:
                out.append(src.read(end, size - end))
            return out
        if kind in (b"zTXt", b"iTXt"):
            out.extend(_png_text(kind, src.read(pos + 8, length), budget))
        elif kind not in _PNG_DATA:
            out.append(src.read(pos + 8, length))
        pos = end


def _png_text(kind: bytes, data: bytes, budget: Budget) -> list[bytes]:
    """A compressed text chunk: its keyword and header as they are, its text expanded."""
    keyword = data.index(b"\0")
    if kind == b"zTXt":
        return [data[:keyword], inflate(data[keyword + 2 :], budget)]
    compressed = data[keyword + 1]
    language = data.index(b"\0", keyword + 3)
    translated = data.index(b"\0", language + 1)
    text = data[translated + 1 :]
    return [data[:translated], inflate(text, budget) if compressed else text]


# -- JPEG: marker segments up to the first scan; the image ends at the last EOI --

_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})
# Where the end of the image is looked for. A file that ends more than this
# after its last EOI is not read as a JPEG.
_JPEG_TAIL = 64 * 1024


def _jpeg(src: Source, budget: Budget) -> list[bytes] | None:
    """The segments before the first scan (APPn: EXIF, XMP, ICC; COM; tables) and the
    bytes after the image, to scan.

    Entropy-coded data has no length, and finding the markers inside it means
    decoding all of a base64 image (five times the cost of the rest); the end
    of the image is found from the tail instead. Appended text holds no 0xFF
    byte, so it cannot pass for the end of the image: it is found after it.
    """
    size, pos, out = src.size, 2, []
    while True:
        head = src.read(pos, 4)
        if len(head) < 2 or head[0] != 0xFF:
            return None
        marker = head[1]
        if marker == 0xFF:  # fill byte before a marker
            pos += 1
            continue
        if marker in _JPEG_STANDALONE:
            pos += 2
            continue
        if marker in (0xD8, 0xD9) or len(head) < 4:
            return None  # a second SOI, or EOI before any image data
        length = _u16be(head, 2)
        end = pos + 2 + length
        if length < 2 or end > size:
            return None
        if marker == 0xDA:
            start = max(end, size - _JPEG_TAIL)
            tail = src.read(start, size - start)
            eoi = tail.rfind(b"\xff\xd9")
            if eoi < 0:
                return None
            rest = tail[eoi + 2 :]
            if rest.strip(b"\0"):
                out.append(rest)
            return out
        out.append(src.read(pos + 4, length - 2))
        pos = end


# -- GIF: header, colour table, then extension and image blocks to the trailer --


def _gif(src: Source, budget: Budget) -> list[bytes] | None:
    data = src.whole()
    flags = data[10]
    pos = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    out: list[bytes] = []
    while True:
        if pos == len(data):
            return out  # no trailer: decoders do without
        block = data[pos]
        if block == 0x3B:
            if data[pos + 1 :].strip(b"\0"):
                out.append(data[pos + 1 :])
            return out
        if block == 0x21:  # extension: comment, plain text, application, graphic control
            start = pos + 2
            pos = _gif_subblocks(data, start)
            out.append(data[start:pos])
        elif block == 0x2C:  # image descriptor, local colour table, LZW code size, data
            flags = data[pos + 9]
            pos += 10 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
            if not 2 <= data[pos] <= 12:
                return None
            pos = _gif_subblocks(data, pos + 1)
        else:
            return None


def _gif_subblocks(data: bytes, pos: int) -> int:
    """The position after the sub-blocks starting at ``pos``; IndexError if cut short."""
    while True:
        length = data[pos]
        pos += 1 + length
        if length == 0:
            return pos
        if pos > len(data):
            raise IndexError(pos)


# -- RIFF (WAV, WebP): chunks of id, little-endian length, data, pad byte --

_RIFF_DATA = {"wav": frozenset({b"data"}), "webp": frozenset({b"VP8 ", b"VP8L", b"ALPH", b"ANMF"})}
_RIFF_ID = re.compile(rb"[\x20-\x7e]{4}")
_RIFF_STREAMING = (0, 0xFFFFFFFF)


def _riff(media: frozenset[bytes], src: Source, budget: Budget) -> list[bytes] | None:
    size, out = src.size, []
    declared = _u32le(src.read(4, 4))
    # A streamed WAV is written before its length is known: 0 or all ones.
    end = size if declared in _RIFF_STREAMING else min(size, 8 + declared)
    pos, chunks = 12, 0
    while pos + 8 <= end:
        head = src.read(pos, 8)
        kind, length = head[:4], _u32le(head, 4)
        if not _RIFF_ID.fullmatch(kind):
            return None
        data_end = pos + 8 + length
        if kind in media and length in _RIFF_STREAMING:
            data_end = end  # a streamed file's sample data runs to its end
        elif data_end > end:
            return None
        elif kind not in media:
            out.append(src.read(pos + 8, length))
        chunks += 1
        pos = data_end + (length & 1)
    if chunks == 0 or pos < end:
        return None
    if 8 + declared < size and declared not in _RIFF_STREAMING:
        out.append(src.read(8 + declared, size))
    return out


# -- MP3: an optional ID3v2 tag, then MPEG audio frames, each header giving its length --

# kbit/s by (version is MPEG-1, layer) and bitrate index.
_BITRATES = {
    (True, 2): (0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (True, 3): (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (False, 2): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (False, 3): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
# Hz by version bits (0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1) and sample rate index.
_SAMPLE_RATES = {0: (11025, 12000, 8000), 2: (22050, 24000, 16000), 3: (44100, 48000, 32000)}


def _mpeg_frame_length(b1: int, b2: int) -> int | None:
    """The length of an MPEG audio frame whose header's second and third bytes are given."""
    if b1 & 0xE0 != 0xE0:
        return None
    version, layer_bits = (b1 >> 3) & 3, (b1 >> 1) & 3
    rate_index, sr_index, padding = b2 >> 4, (b2 >> 2) & 3, (b2 >> 1) & 1
    # Layer I is left out: nothing encodes it, and its header is what a UTF-16
    # byte order mark (FF FE) followed by ASCII looks like.
    if version == 1 or layer_bits in (0, 3) or rate_index in (0, 15) or sr_index == 3:
        return None
    layer = 4 - layer_bits
    mpeg1 = version == 3
    bitrate = _BITRATES[mpeg1, layer][rate_index] * 1000
    rate = _SAMPLE_RATES[version][sr_index]
    if layer == 3 and not mpeg1:
        return 72 * bitrate // rate + padding
    return 144 * bitrate // rate + padding


# Frame length by the header's second and third bytes: one lookup per frame,
# since a 10 MB file has 24,000 of them.
_FRAME_LENGTHS = {
    b1 << 8 | b2: n
    for b1 in range(0xE0, 0x100)
    for b2 in range(0x100)
    if (n := _mpeg_frame_length(b1, b2)) is not None
}


def _mpeg_frame_size(h: bytes) -> int | None:
    if len(h) < 4 or h[0] != 0xFF:
        return None
    return _FRAME_LENGTHS.get(h[1] << 8 | h[2])


_MIN_FRAMES = 3


def _mp3(src: Source, budget: Budget) -> list[bytes] | None:
    size, pos, out = src.size, 0, []
    head = src.read(0, 10)
    if head.startswith(b"ID3"):
        tag = 10 + _syncsafe(head[6:10]) + (10 if head[5] & 0x10 else 0)
        if tag > size:
            return None
        out.append(src.read(10, tag - 10))
        pos = tag
        # Encoders pad between the tag and the first frame.
        pad = src.read(pos, 4096)
        pos += len(pad) - len(pad.lstrip(b"\0"))
    tagged = pos > 0
    frames = 0
    while pos < size:
        h = src.read(pos, 4)
        n = _mpeg_frame_size(h)
        if n is None:
            break
        pos += n
        frames += 1
    # Without a tag the first frame header is the only magic number there is,
    # two bytes of which are common enough: a few frames must chain. A last
    # frame cut short (a recording stopped) counts only after those.
    complete = frames - 1 if pos > size else frames
    if complete < (1 if tagged else _MIN_FRAMES) or (pos > size and complete < _MIN_FRAMES):
        return None
    # The last frame of a cut recording may be short; anything after the last
    # frame (ID3v1 and APE tags, or bytes that are not audio) is scanned.
    if pos < size:
        # ID3v1 and APE tags (text) or anything else after the last frame.
        out.append(src.read(pos, size - pos))
    return out


def _syncsafe(b: bytes) -> int:
    if any(x & 0x80 for x in b):
        raise ValueError("not a syncsafe integer")
    return (b[0] << 21) | (b[1] << 14) | (b[2] << 7) | b[3]


# -- FLAC: metadata blocks from STREAMINFO to the last, then frames to the end --


def _crc_table(poly: int, width: int) -> tuple[int, ...]:
    top, mask = 1 << (width - 1), (1 << width) - 1
    table = []
    for byte in range(256):
        crc = byte << (width - 8)
        for _ in range(8):
            crc = ((crc << 1) ^ poly) if crc & top else crc << 1
        table.append(crc & mask)
    return tuple(table)


_CRC8 = _crc_table(0x07, 8)
_CRC16 = _crc_table(0x8005, 16)
_FLAC_SYNC = re.compile(rb"\xff[\xf8\xf9]")
# How far before the end the last frame may start when STREAMINFO gives no
# maximum frame size.
_FLAC_LAST_FRAME = 1 << 20


def _crc8(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc = _CRC8[crc ^ byte]
    return crc


def _crc16(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16[(crc >> 8) ^ byte]
    return crc


def _flac_frame_header(data: bytes, pos: int) -> bool:
    """Whether a frame header whose CRC-8 holds starts at ``pos``."""
    head = data[pos : pos + 16]
    if len(head) < 6 or head[2] >> 4 == 0 or head[2] & 0xF == 15 or head[3] & 1:
        return False
    # The frame number, coded like UTF-8 in one to seven bytes.
    first = head[4]
    extra = 0 if first < 0x80 else 7 - (~first & 0xFF).bit_length() if 0xC0 <= first <= 0xFE else -1
    if extra < 0:
        return False
    end = 5 + extra
    end += {6: 1, 7: 2}.get(head[2] >> 4, 0) + {12: 1, 13: 2, 14: 2}.get(head[2] & 0xF, 0)
    return end < len(head) and _crc8(head[:end]) == head[end]


def _flac(src: Source, budget: Budget) -> list[bytes] | None:
    """Metadata blocks to scan, once the frames are shown to run to the end.

    Frames carry no length. The first must have a valid header; the last must
    end the file, its CRC-16 (the file's last two bytes) covering everything
    from its header on, so bytes appended to the audio are not taken for it.
    """
    size, pos, out = src.size, 4, []
    first = True
    max_frame = 0
    while True:
        head = src.read(pos, 4)
        if len(head) < 4:
            return None
        last, kind, length = head[0] & 0x80, head[0] & 0x7F, int.from_bytes(head[1:4], "big")
        end = pos + 4 + length
        if kind == 127 or end > size or (first and (kind != 0 or length != 34)):
            return None
        if first:
            max_frame = int.from_bytes(src.read(pos + 11, 3), "big")
        first = False
        if kind not in (0, 3):  # STREAMINFO and SEEKTABLE are numbers
            out.append(src.read(pos + 4, length))
        pos = end
        if last:
            break
    data = src.whole()
    if not _flac_frame_header(data, pos):
        return None
    floor = max(pos, size - (max_frame or _FLAC_LAST_FRAME))
    expected = int.from_bytes(data[-2:], "big")
    for sync in reversed(list(_FLAC_SYNC.finditer(data, floor, size - 2))):
        start = sync.start()
        if _flac_frame_header(data, start) and _crc16(data[start:-2]) == expected:
            return out
    return None


# -- Ogg: pages of header, segment table and body, chained to the end --

_GRANULE_NONE = 0xFFFFFFFFFFFFFFFF


def _ogg(src: Source, budget: Budget) -> list[bytes] | None:
    size, pos, out = src.size, 0, []
    headers = True
    while pos < size:
        head = src.read(pos, 27)
        if len(head) < 27 or not head.startswith(b"OggS\0"):
            return None
        count = head[26]
        table = src.read(pos + 27, count)
        body = pos + 27 + count
        end = body + sum(table)
        if len(table) < count or end > size:
            return None
        granule = int.from_bytes(head[6:14], "little")
        # The codec headers (comments, tags, cover art) come before the first
        # page that has a sample position; the pages after are audio.
        if headers and granule in (0, _GRANULE_NONE):
            out.append(src.read(body, end - body))
        else:
            headers = False
        pos = end
    return out


# -- ISO BMFF (MP4, M4A, MOV, HEIC, AVIF): boxes of length and type tiling the file --

_BOX_TYPE = re.compile(rb"[\x20-\x7e\xa9]{4}")


def _bmff(src: Source, budget: Budget) -> list[bytes] | None:
    size, pos, out = src.size, 0, []
    while pos < size:
        head = src.read(pos, 16)
        if len(head) < 8:
            return None
        length, kind, header = _u32be(head), head[4:8], 8
        if length == 1:
            if len(head) < 16:
                return None
            length, header = int.from_bytes(head[8:16], "big"), 16
        elif length == 0:
            length = size - pos
        if length < header or pos + length > size or not _BOX_TYPE.fullmatch(kind):
            return None
        if pos == 0 and kind != b"ftyp":
            return None
        if kind != b"mdat":
            out.append(src.read(pos + header, length - header))
        pos += length
    return out


# -- EBML (WebM, Matroska): elements of variable-length id and size --

_EBML_HEADER = 0x1A45DFA3
_SEGMENT = 0x18538067
_CLUSTER = 0x1F43B675
_VOID = 0xEC
# Elements that end a Cluster of unknown size (Chrome's MediaRecorder writes those).
_SEGMENT_CHILDREN = frozenset(
    {
        _CLUSTER,
        0x114D9B74,  # SeekHead
        0x1549A966,  # Info
        0x1654AE6B,  # Tracks
        0x1C53BB6B,  # Cues
        0x1254C367,  # Tags
        0x1043A770,  # Chapters
        0x1941A469,  # Attachments
        _EBML_HEADER,
        _SEGMENT,
    }
)


def _element(src: Source, pos: int) -> tuple[int, int | None, int]:
    """(id, size or None when unknown, header length) of the element at ``pos``."""
    head = src.read(pos, 12)
    id_len = 8 - head[0].bit_length() + 1
    if id_len > 4:
        raise ValueError("bad EBML id")
    ident = int.from_bytes(head[:id_len], "big")
    first = head[id_len]
    size_len = 8 - first.bit_length() + 1
    if size_len > 8 or len(head) < id_len + size_len:
        raise ValueError("bad EBML size")
    value = int.from_bytes(head[id_len : id_len + size_len], "big") & ((1 << (7 * size_len)) - 1)
    unknown = value == (1 << (7 * size_len)) - 1
    return ident, None if unknown else value, id_len + size_len


def _ebml(src: Source, budget: Budget) -> list[bytes] | None:
    size, out = src.size, []
    ident, length, header = _element(src, 0)
    if ident != _EBML_HEADER or length is None:
        return None
    out.append(src.read(header, length))
    pos = header + length
    segments = 0
    while pos < size:
        ident, length, header = _element(src, pos)
        if ident == _SEGMENT:
            end = size if length is None else pos + header + length
            if end > size:
                return None
            after = _ebml_segment(src, pos + header, end, out)
            if after is None:
                return None
            pos, segments = after, segments + 1
        elif ident == _VOID and length is not None:
            out.append(src.read(pos + header, length))
            pos += header + length
        else:
            return None
    return out if segments else None


def _ebml_segment(src: Source, pos: int, end: int, out: list[bytes]) -> int | None:
    while pos < end:
        ident, length, header = _element(src, pos)
        if length is None:
            if ident != _CLUSTER:
                return None
            pos = _ebml_open_cluster(src, pos + header, end)
            continue
        child_end = pos + header + length
        if child_end > end:
            return None
        if ident != _CLUSTER:
            out.append(src.read(pos + header, length))
        pos = child_end
    return pos


def _ebml_open_cluster(src: Source, pos: int, end: int) -> int:
    """The end of a Cluster of unknown size: the next element that is not its child."""
    while pos < end:
        ident, length, header = _element(src, pos)
        if ident in _SEGMENT_CHILDREN:
            return pos
        if length is None:
            raise ValueError("unknown size inside a cluster")
        pos += header + length
    if pos > end:
        raise ValueError("cluster past its segment")
    return pos


# -- PDF: a header, objects, and a trailer ending in startxref and %%EOF --

_PDF_HEADER = re.compile(rb"%PDF-[12]\.\d")
_PDF_FILTER = re.compile(rb"/Filter\b")
_EOL = (b"\r\n", b"\n", b"\r")


def _pdf(src: Source, budget: Budget) -> list[bytes] | None:
    """Everything but the filtered (compressed, encoded) streams, where page content lives."""
    data = src.whole()
    if not _PDF_HEADER.match(data):
        return None
    eof = data.rfind(b"%%EOF")
    if eof < 0 or data.rfind(b"startxref", max(0, eof - 1024), eof) < 0:
        return None
    plain: list[bytes] = []
    pos = 0
    while True:
        start = data.find(b"stream", pos, eof)
        if start < 0:
            break
        if data[start - 3 : start] == b"end":
            return None  # an endstream without its stream
        body = start + 6
        for eol in _EOL:
            if data.startswith(eol, body):
                body += len(eol)
                break
        else:
            # "stream" inside a name or string, not the keyword.
            plain.append(data[pos:body])
            pos = body
            continue
        end = data.find(b"endstream", body, eof)
        if end < 0:
            return None
        head = data[pos:start]
        plain.append(head)
        dictionary = head[head.rfind(b"obj") :]
        if not _PDF_FILTER.search(dictionary):
            plain.append(data[body:end])
        pos = end + 9
    plain.append(data[pos:])
    return [b"\n".join(plain)]


_WALKERS: dict[str, Callable[[Source, Budget], list[bytes] | None]] = {
    "png": _png,
    "jpeg": _jpeg,
    "gif": _gif,
    "webp": partial(_riff, _RIFF_DATA["webp"]),
    "wav": partial(_riff, _RIFF_DATA["wav"]),
    "mp3": _mp3,
    "flac": _flac,
    "ogg": _ogg,
    "bmff": _bmff,
    "ebml": _ebml,
    "pdf": _pdf,
}
