"""Bytes that are not a known media file or archive, as the texts a reader would see.

In order:

1. a byte order mark names the encoding: UTF-8, UTF-16 or UTF-32, either order;
2. without one, UTF-32 and UTF-16 are told by their NUL pattern: in text of one
   script, one half (or three quarters) of the bytes is nearly always the same
   value, usually NUL, and the other is not;
3. UTF-8, allowing a few invalid bytes or control characters (one in 64): a
   text file with a stray NUL or 0xFF is text, not binary;
4. anything else: its printable ASCII runs of :data:`MIN_RUN` or more, as
   ``strings`` prints them, one per line.

A decoding that a byte order mark or a NUL pattern chose is a guess an attacker
can steer (``FF FE`` before ASCII decodes to CJK; the pattern is sampled from
the first 4 KiB), so the printable runs of those bytes are scanned as well:
real UTF-16 text of a Latin script has none, every other byte being NUL.
"""

from __future__ import annotations

import codecs
from collections import Counter

MIN_RUN = 8

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# C0 controls that do not occur in text; tab, line breaks, form feed and ESC (in
# coloured logs) do.
_CONTROLS = bytes(b for b in range(0x20) if b not in b"\t\n\x0b\x0c\r\x1b") + b"\x7f"
_PRINTABLE = bytes(1 if 0x20 <= b < 0x7F or b in b"\t\n\x0b\x0c\r" else 0 for b in range(256))
_RUN = b"\x01" * MIN_RUN
# Bytes sampled to choose a wide encoding.
_SAMPLE = 4096


def decode(data: bytes) -> tuple[list[str], bool]:
    """The texts in ``data``, and whether it is clean text (UTF-8 without an error)."""
    codec = None
    for bom, name in _BOMS:
        if data.startswith(bom):
            codec, data = name, data[len(bom) :]
            break
    else:
        codec = _wide_codec(data)
    if codec is not None and codec != "utf-8":
        text = _wide(data, codec)
        if text is not None:
            runs = printable_runs(data)
            return [text, runs] if runs else [text], False
    found = _utf8(data)
    if found is not None:
        return [found[0]], found[1]
    runs = printable_runs(data)
    return ([runs] if runs else []), False


def _tolerance(size: int) -> int:
    return size // 64


def _utf8(data: bytes) -> tuple[str, bool] | None:
    """The text, and whether it was clean; None when too much of it is not UTF-8 text."""
    limit = _tolerance(len(data))
    bad = len(data) - len(data.translate(None, _CONTROLS))
    if bad > limit:
        return None
    try:
        return data.decode("utf-8"), bad == 0
    except UnicodeDecodeError:
        pass
    # Count the invalid sequences, stopping as soon as there are too many: a
    # binary file fails within a few bytes, a text with one bad byte costs two decodes.
    view = memoryview(data)
    pos = 0
    while True:
        try:
            codecs.utf_8_decode(view[pos:], "strict", True)
            break
        except UnicodeDecodeError as exc:
            bad += 1
            if bad > limit:
                return None
            pos += exc.end
    return data.decode("utf-8", "replace"), False


def _dominance(part: bytes) -> tuple[float, float]:
    """(share of NUL, share of NUL plus the commonest other byte) in ``part``."""
    counts = Counter(part)
    zeros = counts.pop(0, 0)
    top = max(counts.values(), default=0)
    return zeros / len(part), (zeros + top) / len(part)


def _wide_codec(data: bytes) -> str | None:
    """UTF-32 or UTF-16 without a byte order mark, told by where its NULs are."""
    sample = data[:_SAMPLE]
    # Fewer bytes than this have no pattern to go by.
    if len(sample) < 2 * MIN_RUN or sample.count(0) * 16 < len(sample):
        return None
    if len(data) % 4 == 0:
        # Plane (nearly always 0) and high byte dominated, the low byte not.
        lanes = [sample[i::4] for i in range(4)]
        for order, codec in (((3, 2, 1, 0), "utf-32-le"), ((0, 1, 2, 3), "utf-32-be")):
            zero, plane, high, low = (lanes[i] for i in order)
            if (
                zero.count(0) == len(zero)
                and _dominance(plane)[1] >= 0.9
                and _dominance(high)[1] >= 0.9
                and _dominance(low)[1] < 0.6
            ):
                return codec
    even, odd = sample[0::2], sample[1::2]
    for high, low, codec in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        zeros, dominant = _dominance(high)
        # A script's high byte (0x00 for Latin, 0x04 for Cyrillic) plus NUL for
        # spaces and digits; the low bytes vary.
        if zeros >= 0.05 and dominant >= 0.9 and _dominance(low)[1] < 0.6:
            return codec
    return None


def _wide(data: bytes, codec: str) -> str | None:
    """UTF-16/32 text, or None when the decoding is mostly NULs and errors."""
    text = data.decode(codec, "replace")
    junk = text.count("\0") + text.count("\ufffd")
    return text if junk <= _tolerance(len(text)) else None


def printable_runs(data: bytes) -> str:
    """Runs of at least :data:`MIN_RUN` printable ASCII characters, one per line."""
    mask = data.translate(_PRINTABLE)
    find = mask.find
    runs: list[str] = []
    pos = find(_RUN)
    while pos >= 0:
        end = find(b"\0", pos + MIN_RUN)
        if end < 0:
            end = len(data)
        runs.append(data[pos:end].decode("ascii"))
        pos = find(_RUN, end)
    return "\n".join(runs)
