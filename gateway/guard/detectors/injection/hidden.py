"""Invisible characters: tag-character smuggling, zero-width runs, bidi tricks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from gateway.guard.detectors.injection.decoders import _BLOB_DECODE_CHARS, _MAX_BLOBS, _as_text
from gateway.guard.detectors.injection.text import _TAG_FIRST
from gateway.guard.detectors.injection.verdict import DENY as _DENY
from gateway.guard.detectors.injection.verdict import REVIEW as _REVIEW
from gateway.guard.detectors.injection.verdict import Hit as _Hit

_ZW_RUN: Final = re.compile("[\u200b\u200c\u200d\u2060\ufeff]{4,}")
_ZW_SPLIT: Final = re.compile("[A-Za-z][\u200b\u200c\u200d\u2060\ufeff\u00ad]+[A-Za-z]")
_BIDI_OVERRIDE: Final = re.compile("[\u202d\u202e]")
_BIDI_ANY: Final = re.compile("[\u202a-\u202e\u2066-\u2069]")
_RTL_LETTER: Final = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_TAG_RUN: Final = re.compile("[\U000e0000-\U000e007f]+")
_BLACK_FLAG: Final = "\U0001f3f4"


def _invisible_hits(text: str) -> tuple[list[_Hit], list[str]]:
    """Hidden-character findings, plus any text smuggled in tag characters."""
    hits: list[_Hit] = []
    hidden: list[str] = []
    for m in _TAG_RUN.finditer(text):
        run = m.group()
        # Subdivision flags (England, Scotland, Wales) are black flag + tags.
        if m.start() > 0 and text[m.start() - 1] == _BLACK_FLAG and len(run) <= 8:
            continue
        decoded = "".join(chr(ord(c) - _TAG_FIRST) for c in run if ord(c) - _TAG_FIRST >= 0x20)
        hidden.append(decoded)
        level = _DENY if len(decoded) >= 4 else _REVIEW
        hits.append(_Hit("invisible_unicode", level, "hidden tag-character text", decoded))
        if len(hidden) >= _MAX_BLOBS:
            break
    if _ZW_RUN.search(text):
        hidden.extend(_decode_zero_width(text))
        hits.append(_Hit("invisible_unicode", _REVIEW, "zero-width run", ""))
    elif len(_ZW_SPLIT.findall(text)) >= 3:
        hits.append(_Hit("invisible_unicode", _REVIEW, "zero-width characters inside words", ""))
    if _BIDI_OVERRIDE.search(text):
        hits.append(_Hit("invisible_unicode", _REVIEW, "bidi override", ""))
    elif _BIDI_ANY.search(text) and not _RTL_LETTER.search(text):
        # Embeddings and isolates are legitimate around right-to-left text;
        # without any, they only serve to reorder what a reviewer sees.
        hits.append(_Hit("invisible_unicode", _REVIEW, "bidi control without RTL text", ""))
    return hits, hidden


def _decode_zero_width(text: str) -> Iterator[str]:
    """Zero-width steganography: two invisible characters used as bits."""
    for count, m in enumerate(_ZW_RUN.finditer(text)):
        if count >= _MAX_BLOBS:
            return
        run = m.group()[: _BLOB_DECODE_CHARS * 8]
        chars = sorted(set(run))
        if len(run) < 64 or len(chars) != 2:
            continue
        for zero, one in ((chars[0], chars[1]), (chars[1], chars[0])):
            bits = run.replace(zero, "0").replace(one, "1")
            data = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits) - 7, 8))
            decoded = _as_text(data)
            if decoded:
                yield decoded
