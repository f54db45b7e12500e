"""Instructions hidden in encodings: base64, base32, hex, percent and entity
escapes, rot13, morse code and reversed text. Candidates are decoded and, if
they turn out to be text, run through the same phrase rules.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from typing import Final
from urllib.parse import unquote

from gateway import compiled
from gateway.guard.detectors.injection.phrases import _phrase_hits
from gateway.guard.detectors.injection.text import _casefolded, _tokens
from gateway.guard.detectors.injection.verdict import DENY as _DENY
from gateway.guard.detectors.injection.verdict import REVIEW as _REVIEW

# Bounds on decoding work for encoded blobs.
_MAX_BLOBS: Final = 16
_BLOB_DECODE_CHARS: Final = 8 * 1024
_LONG_TOKEN: Final = 16

# Encoded payloads. Candidates are decoded and, if they turn out to be text,
# run through the same phrase rules.
_HEX_ESCAPES: Final = re.compile(r"(?:\\x[0-9a-fA-F]{2}){8,}")
# URL-encoded text: escapes with plain characters between them.
_PCT_RUN: Final = re.compile(r"(?:[A-Za-z0-9._~+-]{0,24}%[0-9a-fA-F]{2}){6,}[A-Za-z0-9._~+-]*")
_PCT_ESCAPE: Final = re.compile(r"%[0-9a-fA-F]{2}")  # a literal opener: a fast scan
_PCT_GAP: Final = 24  # plain characters allowed between two escapes of a run
_ENTITY_RUN: Final = re.compile(r"(?:&#x?[0-9a-fA-F]{1,6};){8,}")
# rot13 of words that carry instructions: checking the word set costs nothing.
_ROT13_HINTS: Final = frozenset(
    {
        "vtaber",
        "vafgehpgvbaf",
        "vafgehpgvba",
        "cerivbhf",
        "flfgrz",
        "cebzcg",
        "qvfertneq",
        "sbetrg",
        "erirny",
        "cevag",
    }
)


def _as_text(data: bytes) -> str | None:
    """Decoded bytes that read as text, else None (images, hashes, keys)."""
    if len(data) < 8:
        return None
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\r\t")
    letters = sum(1 for c in decoded if c.isalpha() or c == " ")
    if printable < 0.95 * len(decoded) or letters < 0.6 * len(decoded) or " " not in decoded:
        return None
    return decoded


def _b64_text(blob: str) -> str | None:
    head = blob[:_BLOB_DECODE_CHARS].rstrip("=")
    head = head[: len(head) - len(head) % 4]
    try:
        if "-" in head or "_" in head:
            data = base64.urlsafe_b64decode(head)
        else:
            data = base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _as_text(data)


_B32_ALPHABET: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


def _b32_text(blob: str) -> str | None:
    """Base32 is upper case and digits 2-7 only, which base64 text rarely is."""
    head = blob[:_BLOB_DECODE_CHARS].rstrip("=")
    if not _B32_ALPHABET.issuperset(head):
        return None
    head = head[: len(head) - len(head) % 8] if len(head) % 8 in (1, 3, 6) else head
    try:
        data = base64.b32decode(head + "=" * (-len(head) % 8))
    except (binascii.Error, ValueError):
        return None
    return _as_text(data)


def _hex_text(blob: str) -> str | None:
    digits = blob[:_BLOB_DECODE_CHARS]
    try:
        return _as_text(bytes.fromhex(digits[: len(digits) - len(digits) % 2]))
    except ValueError:
        return None


def _escape_text(blob: str) -> str | None:
    return _hex_text(blob.replace("\\x", ""))


def _pct_text(blob: str) -> str | None:
    text = unquote(blob[:_BLOB_DECODE_CHARS].replace("+", " "))
    return _as_text(text.encode("utf-8", "surrogatepass"))


def _entity_text(blob: str) -> str | None:
    return _as_text(html.unescape(blob[:_BLOB_DECODE_CHARS]).encode("utf-8", "surrogatepass"))


def _image(keep: str) -> bytes:
    """A translation table: bytes in `keep` become "a", all others a space."""
    return bytes(0x61 if chr(b) in keep else 0x20 for b in range(256))


_ALNUM_CHARS: Final = "".join(chr(b) for b in range(128) if chr(b).isalnum())
_ALNUM_IMAGE: Final = _image(_ALNUM_CHARS)
_B64_IMAGE: Final = _image(_ALNUM_CHARS + "+/_-")
_B64_GLUE: Final = frozenset(b"+/_-")  # base64 characters that split words
_HEX_IMAGE: Final = _image("0123456789abcdefABCDEF")
_LOWER_HEX: Final = b"0123456789abcdef"
_LONG_RUN: Final = b"a" * _LONG_TOKEN
_B64_MIN: Final = 24
_HEX_RUN: Final = b"a" * 32


def _blobs(raw: bytes) -> Iterator[tuple[str, bool]]:
    """Base64 (True) or hex (False) runs that hold a word of 16+ letters and
    digits mixed, in text order, each once (for up to _MAX_BLOBS words).

    `raw` is the UTF-8 of the original text (base64 is case-sensitive).
    Encoded text mixes letters and digits; identifiers and numbers do not. A
    base64 run is taken whole, from separator to separator, so that it
    decodes from its start; base64 wrapped into lines yields every line.
    `_blobs.blobs` in C returns the same, as a list.
    """
    alnum = raw.translate(_ALNUM_IMAGE)
    b64 = b""
    seen: set[bytes] = set()
    decoded_from: set[int] = set()
    at = alnum.find(_LONG_RUN)
    while at != -1:
        end = alnum.find(b" ", at)
        end = len(raw) if end == -1 else end
        token = raw[at:end]
        if token in seen or token.isalpha() or token.isdigit():
            at = alnum.find(_LONG_RUN, end)
            continue
        seen.add(token)
        glued = (at and raw[at - 1] in _B64_GLUE) or (end < len(raw) and raw[end] in _B64_GLUE)
        if not glued and not token.translate(None, _LOWER_HEX):
            # A lowercase hex word on its own (hash, id): it never decodes
            # from base64 to anything with a space, which text has (see
            # _as_text); as hex, a space is "20".
            if len(token) >= len(_HEX_RUN) and b"20" in token:
                yield token.decode("ascii"), False
        else:
            # The whole base64 run, so that decoding starts where it does.
            lo, hi = at, end
            if glued:
                b64 = b64 or raw.translate(_B64_IMAGE)
                lo = b64.rfind(b" ", 0, at) + 1
                hi = b64.find(b" ", end)
                hi = len(raw) if hi == -1 else hi
            if hi - lo >= _B64_MIN and lo not in decoded_from:
                decoded_from.add(lo)
                yield raw[lo:hi].decode("ascii"), True
            # A hex run cannot reach past the word's ends (they are not hex).
            image = token.translate(_HEX_IMAGE)
            h = image.find(_HEX_RUN)
            if h != -1:
                h_end = image.find(b" ", h)
                run = token[h : len(token) if h_end == -1 else h_end]
                if b"20" in run:
                    yield run.decode("ascii"), False
        if len(seen) >= _MAX_BLOBS:
            return
        at = alnum.find(_LONG_RUN, end)


def _dot_dash(raw: bytes) -> bool:
    """Whether a dot stands next to a dash: the morse check's first test."""
    return b".-" in raw or b"-." in raw


_BLOBS_C: Final = compiled.load("gateway.guard.detectors.injection._blobs")
_find_blobs: Final[Callable[[bytes], Iterable[tuple[str, bool]]]] = (
    _blobs if _BLOBS_C is None else _BLOBS_C.blobs
)
_has_dot_dash: Final[Callable[[bytes], bool]] = _dot_dash if _BLOBS_C is None else _BLOBS_C.dot_dash


def _runs(text: str, opener: str, pattern: re.Pattern[str]) -> Iterator[str]:
    """`pattern.finditer` for a pattern that starts with `opener`, cheaply."""
    i = text.find(opener)
    while i != -1:
        m = pattern.match(text, i)
        if m:
            yield m.group()
            i = text.find(opener, m.end())
        else:
            i = text.find(opener, i + 1)


def _pct_runs(text: str) -> Iterator[str]:
    """URL-encoded runs: only where six escapes sit close enough together."""
    escapes = [m.start() for m in _PCT_ESCAPE.finditer(text)]
    pos = cluster = 0
    for k in range(1, len(escapes) + 1):
        if k < len(escapes) and escapes[k] - escapes[k - 1] <= 3 + _PCT_GAP:
            continue
        first, last, count = escapes[cluster], escapes[k - 1], k - cluster
        cluster = k
        if count >= 6 and last >= pos:
            while m := _PCT_RUN.search(text, max(pos, first - _PCT_GAP), last + 3):
                # The search stopped at the cluster's end; the run may go on.
                run = (_PCT_RUN.match(text, m.start()) or m).group()
                pos = m.start() + len(run)
                yield run
                if pos > last:
                    break


def _occurs(text: str, sub: str, times: int) -> bool:
    """Whether `sub` occurs at least `times` times without overlap, as
    ``text.count(sub) >= times`` says; a search per occurrence stops at the
    last one needed (a text with a "%" or two is read once, by memchr)."""
    at = 0
    for _ in range(times):
        at = text.find(sub, at)
        if at < 0:
            return False
        at += len(sub)
    return True


def _decoded_candidates(text: str, low: str, present: AbstractSet[str]) -> Iterator[str]:
    """Text hidden in base64, hex, percent/entity escapes or rot13.

    `present`: the text's words among `_KEYS`.
    """
    budget = _MAX_BLOBS
    raw = text.encode("utf-8", "surrogatepass")
    for blob, is_b64 in _find_blobs(raw):
        decoded = (_b32_text(blob) or _b64_text(blob)) if is_b64 else _hex_text(blob)
        if decoded:
            yield decoded
        budget -= 1
        if budget <= 0:
            return
    # One-character memchr checks first: a two-character search or a count
    # costs a full pass even when the opener is absent; and no count, which
    # reads the whole text however few the openers.
    escapes: list[tuple[Iterator[str], Callable[[str], str | None]]] = []
    if "\\" in text and "\\x" in text:
        escapes.append((_runs(text, "\\x", _HEX_ESCAPES), _escape_text))
    if _occurs(text, "%", 6):
        escapes.append((_pct_runs(text), _pct_text))
    if "&" in text and _occurs(text, "&#", 8):
        escapes.append((_runs(text, "&#", _ENTITY_RUN), _entity_text))
    for runs, decode in escapes:
        for run in runs:
            decoded = decode(run)
            if decoded:
                yield decoded
            budget -= 1
            if budget <= 0:
                return
    if not _ROT13_HINTS.isdisjoint(present):
        yield codecs.decode(" ".join(low[: _BLOB_DECODE_CHARS * 8].split()), "rot13")
    if not _REVERSED_HINTS.isdisjoint(present):
        yield " ".join(low[: _BLOB_DECODE_CHARS * 8].split())[::-1]
    # Twelve morse letters make a run of 24+ characters without a letter or
    # digit: a dot next to a dash, then one search in an image of the
    # letters and digits, then the dots and dashes.
    if _has_dot_dash(raw) and _MORSE_GAP in raw.translate(_ALNUM_IMAGE):
        for count, m in enumerate(_MORSE_RUN.finditer(text)):
            decoded = _morse_text(m.group())
            if decoded:
                yield decoded
            if count >= _MAX_BLOBS:
                return


# Reversed spellings of words that carry instructions: a word-set check.
_REVERSED_HINTS: Final = frozenset(
    w[::-1]
    for w in (
        "ignore", "instructions", "instruction", "previous", "prompt", "system", "disregard",
        "forget", "reveal", "password", "secret",
    )
)  # fmt: skip

_MORSE: Final = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g",
    "....": "h", "..": "i", ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n",
    "---": "o", ".--.": "p", "--.-": "q", ".-.": "r", "...": "s", "-": "t", "..-": "u",
    "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z", "-----": "0",
    ".----": "1", "..---": "2", "...--": "3", "....-": "4", ".....": "5", "-....": "6",
    "--...": "7", "---..": "8", "----.": "9",
}  # fmt: skip
_MORSE_GAP: Final = b" " * 24
# Twelve or more morse letters, separated by spaces or slashes (word breaks).
_MORSE_RUN: Final = re.compile(r"(?:[.\-]{1,6}[ /|]{1,9}){12,}[.\-]{0,6}")


def _morse_text(run: str) -> str | None:
    words = []
    for word in re.split(r"\s*[/|]\s*|\s{3,}", run[:_BLOB_DECODE_CHARS].strip()):
        letters = [_MORSE.get(code) for code in word.split()]
        if not letters or None in letters:
            return None
        words.append("".join(c for c in letters if c))
    decoded = " ".join(words)
    return decoded if " " in decoded else None


def _hidden_instruction(decoded: str) -> bool:
    low = _casefolded(decoded)
    inner = [h for h in _phrase_hits(low, set(_tokens(low))) if h.level >= _REVIEW]
    return any(h.level == _DENY for h in inner) or len(inner) >= 2
