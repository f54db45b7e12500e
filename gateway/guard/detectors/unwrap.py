"""Secrets in a wrapping: the texts a reader sees once it is undone.

A secret is still a secret when it is base64- or hex-encoded, written as
percent, HTML-entity or backslash escapes, split by invisible characters or
spelled with fullwidth and look-alike letters. `walk` derives from a text the
views a reader (or the model upstream) would get by undoing the wrapping, runs
the secret scan on each view, and keeps what the scan finds in the part of the
view that decoding or normalising changed. Each decoding step works on the
previous step's view, so nested wrappings come apart one level at a time.

A view holds each changed piece with some of the line around it, because many
rules need the name before a value (``password=``, ``Authorization:``). A
finding that lies only in that context was already judged in the text it came
from, so it is not reported again.

The steps, and the test that keeps clean text from paying for them:

  normalisation   only for text that is not ASCII. NFKC for the whole text
                  (fullwidth and mathematical letters, no-break spaces), when
                  ``unicodedata.is_normalized`` says it changes anything. Then
                  the tokens where an ASCII letter or digit meets a character
                  outside Latin-1 (found with one encode, translate and find)
                  lose their default-ignorable characters (zero-width, joiners,
                  soft hyphen, variation selectors, tags) and combining marks,
                  and have letters, digits and dashes that look like ASCII ones
                  folded to them (`FOLD`). Prose in another script has no such
                  tokens and is left alone.
  escapes         only where ``%``, ``&``, ``\\`` or ``0x`` occur, then a search
                  led by that literal: the whitespace-free token around each
                  ``%XX``, ``&name;``/``&#NN;``/``&#xHH;``, ``\\xHH``/``\\uHHHH``
                  is decoded; ``0x67, 0x68, ...`` lists are decoded as hex.
  base64 and hex  one ``bytes.translate`` and one ``find``: runs of 16 or more
                  base64 characters, with the lines that continue them (wrapped
                  output, ``# `` comment prefixes, ``\\n`` escapes, quoted
                  pieces); hex may have a ``0x`` prefix. Lowercase or uppercase
                  words and names, CamelCase names, and hex that does not spell
                  ASCII text or start a DER structure (hashes, ids) are turned
                  away before anything is decoded. Decoded bytes are kept as
                  text only when they read as text; binary is dropped unless it
                  is the DER of a private key (PKCS#1, PKCS#8, encrypted
                  PKCS#8, SEC1) or an OpenSSH key, which is itself a finding
                  (kind ``private_key``, value the key bytes in base64).

Bounds: at most `MAX_DEPTH` decoding steps; within a step every character is
decoded a bounded number of times (a block whole, then its lines one by one);
all views together hold at most `MAX_GROWTH` characters per input character
and `MAX_VIEW_CHARS` in all. A text that needs more (deeper nesting, or
normalisation that multiplies it) raises `UnwrapLimit`: a text that cannot be
read to the end is not let through as if it had been.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import html
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import unquote_to_bytes

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.serialization import load_der_private_key

from gateway import compiled
from gateway.guard.findings import Finding

__all__ = [
    "FOLD",
    "MAX_DEPTH",
    "MAX_GROWTH",
    "MAX_VIEW_CHARS",
    "UnwrapLimit",
    "View",
    "Walk",
    "find",
    "is_private_key",
    "normalise",
    "walk",
]

Scan = Callable[[str], list[Finding]]
_Item = tuple[int, int, str]  # a span of a text, and what it reads as once undone

MAX_DEPTH = 4  # decoding steps from the text to its deepest view
MAX_GROWTH = 8  # characters of all views together, per character of the text
MAX_VIEW_CHARS = 1 << 26  # and in all, whatever the input (the pipeline windows large texts)
_SLACK = 1 << 16  # what short texts may always add

_MIN_RUN = 16  # base64 or hex characters: 12 or 8 bytes, less than any key
_BEFORE = 80  # context kept before a decoded piece: a key name and its operator
_AFTER = 32  # and after it: the end of a token, a closing quote
_SNIFF = 4096  # base64 characters decoded to tell a large binary payload
_MAX_DER = 16384  # bytes: more than the largest private key in DER


class UnwrapLimit(ValueError):
    """The text holds more wrapping than the bounds allow it to be read through."""


@dataclass(frozen=True, slots=True)
class View:
    """A derived text, and the spans of it that differ from the text it came from."""

    text: str
    spans: tuple[tuple[int, int], ...]
    _ends: list[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ends", [end for _, end in self.spans])

    def touches(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` overlaps a changed span."""
        i = bisect.bisect_right(self._ends, start)
        return i < len(self.spans) and self.spans[i][0] < end


@dataclass(slots=True)
class Walk:
    """What `walk` found, and the work it did (for the bounds tests)."""

    found: list[tuple[str, str]]
    views: list[View] = field(default_factory=list)
    depth: int = 0  # decoding steps that produced a view
    view_chars: int = 0
    decoded_chars: int = 0  # characters handed to a decoder, over all steps
    _limit: int = 0
    _seen: set[tuple[str, str]] = field(default_factory=set)

    def add(self, kind: str, value: str) -> None:
        if (kind, value) not in self._seen:
            self._seen.add((kind, value))
            self.found.append((kind, value))

    def keep(self, view: View, scan: Scan) -> list[tuple[int, int]]:
        """Scan a view; report what touches a changed span. Returns its private key spans."""
        self.view_chars += len(view.text)
        if self.view_chars > self._limit:
            raise UnwrapLimit("decoded text exceeds the bound for this input")
        self.views.append(view)
        findings = scan(view.text)
        for f in findings:
            if view.touches(f.start, f.end):
                self.add(f.kind, view.text[f.start : f.end])
        return _key_spans(findings)


def _key_spans(findings: list[Finding]) -> list[tuple[int, int]]:
    # The body of a PEM key the scan found is key material in base64 too: it is
    # not reported a second time.
    return [(f.start, f.end) for f in findings if f.kind == "private_key"]


def find(text: str, scan: Scan) -> list[tuple[str, str]]:
    """(kind, value) for each secret `scan` finds in ``text`` or in a view derived from it."""
    findings = scan(text)
    if not _clean_text(text):
        return _walk(text, findings, scan).found
    # A loop rather than a comprehension, which is a frame of its own.
    found: list[tuple[str, str]] = []
    for f in findings:
        found.append((f.kind, text[f.start : f.end]))
    return found


def _clean(text: str) -> bool:
    """Whether the walk of ``text`` would make no view: the gates of every step at once.

    ASCII text needs no normalisation, so without escapes only its base64 and
    hex runs could make a view; tool output is full of runs (hashes, ids,
    paths, names) that `_blocks` turns away before decoding, and `_quiet`
    makes the same judgement without the rest of the walk.
    """
    if not text.isascii() or _has_escapes(text):
        return False
    img = text.encode("ascii").translate(_IMAGE)
    return (at := img.find(_NEED)) < 0 or _quiet(text, img, at)


def _compiled_gate() -> Callable[[str], bool] | None:
    # `_clean` in C, in one pass over the text, with the same answer.
    module = compiled.load("gateway.guard.detectors._unwrap_gate")
    return None if module is None else module.clean


_compiled_clean = _compiled_gate()
_clean_text: Final = _compiled_clean or _clean


def _has_escapes(text: str) -> bool:
    # One character checked first: a search for one is a memchr, for two or a
    # regex led by them a slower scan.
    return (
        ("%" in text and _PCT_RE.search(text) is not None)
        or ("&" in text and _ENTITY_RE.search(text) is not None)
        or ("\\" in text and _BACKSLASH_RE.search(text) is not None)
        or ("0" in text and _HEX_LIST_RE.search(text) is not None)
    )


def walk(text: str, scan: Scan) -> Walk:
    """What `find` does, with the views and the work it took."""
    return _walk(text, scan(text), scan)


def _walk(text: str, findings: list[Finding], scan: Scan) -> Walk:
    """The steps of `find`."""
    result = Walk([(f.kind, text[f.start : f.end]) for f in findings])
    result._seen.update(result.found)
    result._limit = min(MAX_GROWTH * len(text) + _SLACK, MAX_VIEW_CHARS)
    source = text
    flagged = _key_spans(findings)
    while True:
        normalised = _normalised(source)
        if normalised is not None:
            canonical, edits = normalised
            if edits is None:
                flagged = result.keep(View(canonical, ((0, len(canonical)),)), scan)
            else:
                result.keep(_windows(source, edits), scan)
                flagged = _apply(source, edits, flagged)[1]
            source = canonical
        items, keys = _decoded(source, flagged, result)
        for key in keys:
            result.add("private_key", key)
        if not items:
            return result
        if result.depth == MAX_DEPTH:
            raise UnwrapLimit(f"wrapped more than {MAX_DEPTH} levels deep")
        result.depth += 1
        view = _windows(source, items)
        flagged = result.keep(view, scan)
        source = view.text


# ---------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------

# Unicode's Default_Ignorable_Code_Point: invisible, so a reader never sees them.
_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# Combining marks that put accents on letters: a token keeps its letters under them.
_MARKS = ((0x0300, 0x036F), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF), (0xFE20, 0xFE2F))
# Latin letters with diacritics, to their base letter.
_ACCENTED = ((0x00C0, 0x024F), (0x1E00, 0x1EFF))

# From Unicode's confusables.txt (UTS #39): each character confusable with one
# ASCII letter, digit or one of -_.:/=+@, and not made ASCII by NFKC; where the
# skeleton maps a capital letter to "l", the capital "I" a reader sees instead.
# Decimal digits of every script are folded to theirs by value (see _fold_table).
FOLD: dict[str, str] = {
    "+": "\u16ed\u2795\U0001029b",
    "-": "\u02d7\u2010\u2012\u2013\u2043\u2212\u2796\u2cba\ufe58",
    ".": "\ua4f8\ua60e\U0001d16d",
    "/": "\u1735\u2041\u2044\u2215\u2571\u27cb\u29f8\u2cc6\u3033\u30ce\u31d3\u4e3f\U0001d23a",
    "2": "\u01a7\u03e8\u14bf\ua644\ua6ef\ua75a",
    "3": "\u01b7\u021c\u0417\u04e0\u2ccc\ua76a\ua7ab\U000118ca\U00016f3b\U0001d206",
    "4": "\u13ce\U000118af",
    "5": "\u01bc\U000118bb",
    "6": "\u0431\u13ee\u2cd2\U000118d5",
    "7": "\U000104d2\U000118c6\U0001d212",
    "8": "\u0222\u0223\u0b03\U0001031a",
    "9": "\u2cca\ua76e\U000118ac\U000118cc\U000118d6",
    ":": "\u02d0\u02f8\u0589\u0903\u0a83\u16ec\u1803\u1809\u205a\u2236\ua4fd\ua789",
    "=": "\u1400\u2e40\u30a0\ua4ff",
    "A": "\u0391\u0410\u13aa\u15c5\ua4ee\U000102a0\U00016f40",
    "B": "\u0392\u0412\u13f4\u15f7\ua4d0\ua7b4\U00010282\U000102a1\U00010301",
    "C": (
        "\u03f9\u0421\u13df\u2ca4\ua4da\U000102a2\U00010302\U00010415\U0001051c\U000118f2\U0001f74c"
    ),
    "D": "\u13a0\u15de\u15ea\ua4d3",
    "E": "\u0395\u0415\u13ac\u22ff\u2d39\ua4f0\U00010286\U000118a6\U000118ae",
    "F": ("\u03dc\u15b4\ua4dd\ua798\U00010287\U000102a5\U00010525\U000118a2\U000118c2\U0001d213"),
    "G": "\u050c\u13c0\u13f3\ua4d6",
    "H": "\u0397\u041d\u13bb\u157c\u2c8e\ua4e7\U000102cf",
    "I": "\u0196\u0399\u0406\u04c0\u2c92",
    "J": "\u037f\u0408\u13ab\u148d\ua4d9\ua7b2",
    "K": "\u039a\u041a\u13e6\u16d5\u2c94\ua4d7\U00010518",
    "L": ("\u13de\u14aa\u2cd0\ua4e1\U0001041b\U00010526\U000118a3\U000118b2\U00016f16\U0001d22a"),
    "M": "\u039c\u03fa\u041c\u13b7\u15f0\u16d6\u2c98\ua4df\U000102b0\U00010311",
    "N": "\u039d\u2c9a\ua4e0\U00010513",
    "O": (
        "\u039f\u041e\u0555\u0b20\u12d0\u2c9e\u2d54\u3007\ua4f3\U00010292\U000102ab"
        "\U00010404\U000104c2\U00010516\U000118b5"
    ),
    "P": "\u03a1\u0420\u13e2\u146d\u2ca2\ua4d1\U00010295",
    "Q": "\u2d55",
    "R": "\u01a6\u13a1\u13d2\u1587\ua4e3\U000104b4\U00016f35\U0001d216",
    "S": "\u0405\u054f\u13d5\u13da\ua4e2\U00010296\U00010420\U00016f3a",
    "T": (
        "\u03a4\u0422\u13a2\u22a4\u27d9\u2ca6\ua4d4\U00010297\U000102b1\U00010315"
        "\U000118bc\U00016f0a\U0001f768"
    ),
    "U": "\u054d\u1200\u144c\u222a\u22c3\ua4f4\U000104ce\U000118b8\U00016f42",
    "V": "\u0474\u13d9\u142f\u2d38\ua4e6\ua6df\U0001051d\U000118a0\U00016f08\U0001d20d",
    "W": "\u051c\u13b3\u13d4\ua4ea\U000118ef",
    "X": (
        "\u03a7\u0425\u166d\u16b7\u2573\u2cac\u2d5d\ua4eb\ua7b3\U00010290\U000102b4"
        "\U00010317\U00010322\U00010527\U000118ec"
    ),
    "Y": "\u03a5\u0423\u04ae\u13a9\u13bd\u2ca8\ua4ec\U000102b2\U000118a4\U00016f43",
    "Z": "\u0396\u13c3\ua4dc\U000102f5\U000118a9",
    "a": "\u0251\u03b1\u0430\u237a",
    "b": "\u0184\u042c\u13cf\u1472\u15af",
    "c": "\u03f2\u0441\u1d04\u2ca5\uabaf\U0001043d",
    "d": "\u0501\u13e7\u146f\ua4d2",
    "e": "\u0435\u04bd\u212e\uab32",
    "f": "\u0584\u1e9d\ua799\uab35",
    "g": "\u018d\u0261\u0581\u1d83",
    "h": "\u04bb\u0570\u13c2",
    "i": ("\u0131\u0269\u026a\u02db\u037a\u03b9\u0456\u04cf\u13a5\u2373\ua647\uab75\U000118c3"),
    "j": "\u03f3\u0458",
    "l": ("\u01c0\u16c1\u2223\u23fd\u2d4f\ua4f2\uffe8\U0001028a\U00010309\U00010320\U00016f28"),
    "n": "\u0578\u057c",
    "o": (
        "\u03bf\u03c3\u043e\u0585\u0c02\u0c82\u0d02\u0d20\u0d82\u101d\u10ff\u1d0f\u1d11"
        "\u2c9f\uab3d\U0001042c\U000104ea\U000118c8\U000118d7"
    ),
    "p": "\u03c1\u0440\u2374\u2ca3",
    "q": "\u051b\u0563\u0566",
    "r": "\u0433\u1d26\u2c85\uab47\uab48\uab81",
    "s": "\u01bd\u0455\ua731\uabaa\U00010448\U000118c1",
    "u": "\u028b\u03c5\u057d\u1d1c\ua79f\uab4e\uab52\U000104f6\U000118d8",
    "v": "\u03bd\u0475\u1d20\u2228\u22c1\uaba9\U00011706\U000118c0",
    "w": "\u026f\u0461\u051d\u0561\u1d21\uab83\U0001170a\U0001170e\U0001170f",
    "x": "\u00d7\u0445\u1541\u157d\u166e\u292b\u292c\u2a2f",
    "y": "\u0263\u028f\u03b3\u0443\u04af\u10e7\u1d8c\u1eff\uab5a\U000118dc",
    "z": "\u1d22\uab93\U000118c4",
}


def _code_points(ranges: tuple[tuple[int, int], ...]) -> Iterator[int]:
    for lo, hi in ranges:
        yield from range(lo, hi + 1)


def _fold_table() -> dict[int, str | None]:
    table: dict[int, str | None] = {}
    for cp in _code_points(_ACCENTED):
        base = unicodedata.normalize("NFD", chr(cp))[0]
        if base.isascii() and base.isalpha():
            table[cp] = base
    for target, sources in FOLD.items():
        for ch in sources:
            table[ord(ch)] = target
    for cp in range(0x660, 0x1FBFA):
        digit = unicodedata.decimal(chr(cp), None)
        if digit is not None:
            table[cp] = str(digit)
    for cp in _code_points(_IGNORABLE + _MARKS):
        table[cp] = None
    return table


_TABLE = _fold_table()


def normalise(text: str) -> str:
    """``text`` as a reader takes it: invisibles and accents dropped, NFKC, look-alikes folded.

    Folded before NFKC as well as after it, because NFKC turns some look-alikes
    (lunate sigma) into letters that are not, and others (mathematical Greek)
    into letters that are.
    """
    return unicodedata.normalize("NFKC", text.translate(_TABLE)).translate(_TABLE)


def _normalised(text: str) -> tuple[str, list[_Item] | None] | None:
    """``text`` with what normalisation changes in it, or None when nothing changes.

    NFKC is applied to the whole text (it is fast); the fold, which is not,
    to the tokens where ASCII letters or digits meet other characters: a token
    hidden by invisible characters, accents or look-alike letters is such a
    token, prose in another script is not. Returns the new text and the
    token edits when NFKC changed nothing (so that offsets still hold), or
    the new text and None when it did.
    """
    if text.isascii():
        return None
    base = text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)
    edits = _token_edits(base)
    if base is text:
        return (_apply(text, edits, [])[0], edits) if edits else None
    return _apply(base, edits, [])[0], None


def _token_edits(text: str) -> list[_Item]:
    # Latin-1 keeps accented letters as one byte each; other characters become
    # "?". Punctuation that meets words in ordinary text (and "?" itself) is
    # blanked first, each a replace of one character, so that it makes no hits.
    plain = text
    for char in _PLAIN:
        if char in plain:
            plain = plain.replace(char, " ")
    img = plain.encode("latin-1", "replace").translate(_MIX_IMAGE)
    hits = [*_positions(img, b"an"), *_positions(img, b"na")]
    hits.sort()
    edits: list[_Item] = []
    floor = 0
    for pos in hits:
        if pos < floor:
            continue
        lo = max(floor, *(text.rfind(c, floor, pos) + 1 for c in _WHITESPACE))
        token_end = _TOKEN_END_RE.match(text, pos)
        hi = pos if token_end is None else token_end.end()
        floor = hi
        token = text[lo:hi]
        new = normalise(token)
        if new != token:
            edits.append((lo, hi, new))
    return edits


_PLAIN = "?\u2018\u2019\u201c\u201d\u2014\u2026\u2022\u20ac"


def _positions(data: bytes, needle: bytes) -> list[int]:
    out = []
    at = data.find(needle)
    while at >= 0:
        out.append(at)
        at = data.find(needle, at + 1)
    return out


# ASCII letters and digits as "a"; characters Latin-1 lacks (made "?") and the
# soft hyphen, which it has, as "n".
_MIX_IMAGE = bytes(
    0x61 if chr(b).isalnum() and b < 0x80 else 0x6E if b in (0x3F, 0xAD) else 0x20
    for b in range(256)
)


def _apply(
    text: str, edits: list[_Item], flagged: list[tuple[int, int]]
) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with the edits made, and the flagged spans that survive them, moved."""
    parts, last = [], 0
    shifts: list[tuple[int, int, int]] = []  # (start, end, offset after this edit)
    offset = 0
    for start, end, new in edits:
        parts.append(text[last:start])
        parts.append(new)
        last = end
        offset += len(new) - (end - start)
        shifts.append((start, end, offset))
    parts.append(text[last:])
    moved = []
    for fs, fe in flagged:
        i = bisect.bisect_right(shifts, (fs, len(text) + 1, 0))
        # A span that an edit touches is dropped: the edited token is scanned anew.
        if (i and shifts[i - 1][1] > fs) or (i < len(shifts) and shifts[i][0] < fe):
            continue
        delta = shifts[i - 1][2] if i else 0
        moved.append((fs + delta, fe + delta))
    return "".join(parts), moved


# ---------------------------------------------------------------------------
# One decoding step
# ---------------------------------------------------------------------------


def _decoded(
    text: str, flagged: list[tuple[int, int]], result: Walk
) -> tuple[list[_Item], list[str]]:
    """Each wrapped piece of ``text`` that decodes to text, and the private keys in binary ones.

    ``flagged``: the spans of private keys the scan already found in ``text``.
    """
    items: list[_Item] = []
    keys: list[_Item] = []  # spans of binary that is a private key, and the key in base64
    _escapes(text, items, keys, result)
    _hex_lists(text, items, keys, result)
    _blocks(text, items, keys, result)
    return _unflagged(items, []), [key for *_, key in _unflagged(keys, sorted(flagged))]


def _unflagged(items: list[_Item], flagged: list[tuple[int, int]]) -> list[_Item]:
    """The items, in order, without those inside a flagged span or overlapping one before."""
    items.sort()
    kept: list[_Item] = []
    f = 0
    for item in items:
        if kept and item[0] < kept[-1][1]:
            continue  # overlaps a piece already taken (an escape token holds a run)
        while f < len(flagged) and flagged[f][1] <= item[0]:
            f += 1
        if f < len(flagged) and flagged[f][0] <= item[0] and item[1] <= flagged[f][1]:
            continue
        kept.append(item)
    return kept


def _windows(text: str, items: list[_Item]) -> View:
    """The decoded pieces in place, each with the line around it, merged where they meet."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    size = 0
    floor = 0
    i, n = 0, len(items)
    while i < n:
        start, end, decoded = items[i]
        lo = _context_start(text, start, floor)
        hi = _context_end(text, end)
        if parts:
            parts.append("\n")
            size += 1
        parts.append(text[lo:start])
        size += start - lo
        while True:
            spans.append((size, size + len(decoded)))
            parts.append(decoded)
            size += len(decoded)
            i += 1
            if i == n or items[i][0] >= hi:
                break
            nxt, end_next, decoded = items[i]
            parts.append(text[end:nxt])
            size += nxt - end
            end = end_next
            hi = max(hi, _context_end(text, end))
        parts.append(text[end:hi])
        size += hi - end
        floor = hi
    return View("".join(parts), tuple(spans))


_SPACE_RE = re.compile(r"[ \t]")


def _context_start(text: str, pos: int, floor: int) -> int:
    """Up to `_BEFORE` characters of the line before ``pos``, starting at a whole token."""
    line = text.rfind("\n", 0, pos) + 1
    lo = max(line, pos - _BEFORE, floor)
    if lo == line:
        return lo
    m = _SPACE_RE.search(text, lo, pos)
    return pos if m is None else m.end()


def _context_end(text: str, pos: int) -> int:
    """Up to `_AFTER` characters of the line after ``pos``, ending at a whole token."""
    line_end = text.find("\n", pos, pos + _AFTER + 1)
    if line_end >= 0:
        return line_end
    hi = min(len(text), pos + _AFTER)
    if hi == len(text):
        return hi
    return max(pos, text.rfind(" ", pos, hi), text.rfind("\t", pos, hi))


# ---------------------------------------------------------------------------
# Escapes: %XX, HTML entities, backslash escapes, 0x lists
# ---------------------------------------------------------------------------

_PCT_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_ENTITY_RE = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9A-Fa-f]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)")
_BACKSLASH_RE = re.compile(
    r"\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|u\{[0-9A-Fa-f]{1,6}\}|U[0-9A-Fa-f]{8})"
)
_ESCAPES = (("%", _PCT_RE), ("&", _ENTITY_RE), ("\\", _BACKSLASH_RE))
_TOKEN_END_RE = re.compile(r"[^ \t\n\r\f\v]*+")
_WHITESPACE = " \t\n\r\f\v"
# Runs of \xHH (the bytes of one UTF-8 text) and of \uHHHH (UTF-16 units, pairs included).
_X_RUN_RE = re.compile(r"(?:\\x[0-9A-Fa-f]{2})+")
_U_RUN_RE = re.compile(r"(?:\\u[0-9A-Fa-f]{4})+")
_U_OTHER_RE = re.compile(r"\\u\{([0-9A-Fa-f]{1,6})\}|\\U([0-9A-Fa-f]{8})")
_HEX_LIST_RE = re.compile(r"0x[0-9A-Fa-f]{2}(?:[ \t]{0,2}[,;:]?[ \t]{0,2}0x[0-9A-Fa-f]{2}){7,}")
_HEX_PAIR_RE = re.compile(r"0x([0-9A-Fa-f]{2})")


def _escapes(text: str, items: list[_Item], keys: list[_Item], result: Walk) -> None:
    starts: list[int] = []
    for literal, rx in _ESCAPES:
        if literal in text:
            starts.extend(m.start() for m in rx.finditer(text))
    if not starts:
        return
    starts.sort()
    floor = 0
    for pos in starts:
        if pos < floor:
            continue  # in the token just decoded
        lo = max(floor, *(text.rfind(c, floor, pos) + 1 for c in _WHITESPACE))
        token_end = _TOKEN_END_RE.match(text, pos)
        hi = pos if token_end is None else token_end.end()
        floor = hi
        token = text[lo:hi]
        result.decoded_chars += len(token)
        decoded = _unescape(token)
        if decoded is None:
            continue
        if isinstance(decoded, bytes):
            _found(decoded, lo, hi, items, keys)
        elif decoded != token:
            items.append((lo, hi, decoded))


def _unescape(token: str) -> str | bytes | None:
    """One level of every escape in ``token``; bytes when percent escapes made it binary."""
    if "\\" in token:
        token = _unbackslash(token)
    if "&" in token:
        token = html.unescape(token)
    if "%" in token and _PCT_RE.search(token):
        raw = unquote_to_bytes(token)
        if len(raw) >= _MIN_TEXT and _as_text(raw) is None:
            return raw
        decoded = raw.decode("utf-8", "replace")
        if "\ufffd" in decoded and "\ufffd" not in token:
            # Not percent-encoded text: "%DB_PASSWORD%" is a Windows variable
            # reference, and "%DB" no escape in it.
            return token
        return decoded
    return token


def _unbackslash(token: str) -> str:
    token = _X_RUN_RE.sub(_x_run, token)
    token = _U_RUN_RE.sub(_u_run, token)
    return _U_OTHER_RE.sub(_u_other, token)


def _x_run(m: re.Match[str]) -> str:
    raw = bytes.fromhex(m.group().replace("\\x", ""))
    return raw.decode("utf-8", "replace")


def _u_run(m: re.Match[str]) -> str:
    units = bytes.fromhex(m.group().replace("\\u", ""))
    return units.decode("utf-16-be", "replace")


def _u_other(m: re.Match[str]) -> str:
    cp = int(m.group(1) or m.group(2), 16)
    return chr(cp) if cp < 0x110000 else "\ufffd"


def _hex_lists(text: str, items: list[_Item], keys: list[_Item], result: Walk) -> None:
    if "0" not in text or "0x" not in text:
        return
    for m in _HEX_LIST_RE.finditer(text):
        result.decoded_chars += m.end() - m.start()
        raw = bytes.fromhex("".join(_HEX_PAIR_RE.findall(m.group())))
        _found(raw, m.start(), m.end(), items, keys)


# ---------------------------------------------------------------------------
# Base64 and hex runs, and the lines that continue them
# ---------------------------------------------------------------------------


def _image() -> bytes:
    # Standard base64 characters count towards a run; "-" and "_" (URL-safe,
    # and the glue of identifiers) extend one but do not start it.
    core = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    return bytes(0x61 if b in core else 0x62 if b in b"-_" else 0x20 for b in range(256))


_IMAGE = _image()
_EXTEND = 0x62
_NEED = b"a" * _MIN_RUN
_HEX_LEADS = "234567"  # first digit of a printable ASCII byte, and of DER's 0x30
_RUN_CHARS = "A-Za-z0-9+/_-"
# Between two lines of one wrapped block: a real or escaped line break, with
# the quotes, commas, "+" concatenation and comment prefixes around it.
_GAP = (
    r"[ \t\"',]{0,8}+\+?[ \t]{0,4}+(?:\\r)?(?:\\n|\r?\n)"
    r"(?:[ \t\"']|\\[rn]|\r?\n){0,16}+"
    r"(?:(?:[#;>*]|//(?=[ \t])|--(?=[ \t])|\+(?=[ \t\"']))[ \t\"']{0,8}+)?"
)
_NEXT_LINE_RE = re.compile(
    _GAP + rf"([{_RUN_CHARS}]{{4,}}+={{0,2}})(?=[ \t\"',;+]{{0,8}}(?:\r?\n|\\[rn]|\Z))"
)
_CAMEL_RE = re.compile(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*")
_HEX_DIGITS = "0123456789abcdefABCDEF"
_URLSAFE = str.maketrans("-_", "+/")
_GLUE_RE = re.compile(r"[-_]")


def _blocks(text: str, items: list[_Item], keys: list[_Item], result: Walk) -> None:
    img = text.encode("ascii", "replace").translate(_IMAGE)
    floor = 0
    at = img.find(_NEED)
    while at >= 0:
        end = img.find(b" ", at)
        end = len(img) if end < 0 else end
        if at > floor and img[at - 1] == _EXTEND:
            at = max(floor, img.rfind(b" ", floor, at) + 1)  # the run starts with "-" or "_"
        start = at
        floor = end
        # Most runs in clean text are hashes, ids and names: turned away here,
        # before anything else is looked at. Hex is decoded when it spells
        # ASCII text or starts a DER structure; a wrapped block of either
        # starts with such a line.
        run = text[start:end]
        if run[1:2] in "xX" and run[0] == "0" and not run[2:].lstrip(_HEX_DIGITS):
            # 0x-prefixed hex: decoded in place of the prefix too, which would
            # otherwise be glued to what it decodes to.
            if len(run) % 2 == 0:
                result.decoded_chars += len(run)
                _found(bytes.fromhex(run[2:]), start, end, items, keys)
            at = img.find(_NEED, floor)
            continue
        if not run.lstrip(_HEX_DIGITS):
            if len(run) % 2 or run[0] not in _HEX_LEADS:
                at = img.find(_NEED, floor)
                continue
            raw = bytes.fromhex(run)
            if not raw.isascii() and raw[0] != _SEQUENCE:
                result.decoded_chars += len(run)
                at = img.find(_NEED, floor)
                continue
        elif run.islower() or run.isupper():
            at = img.find(_NEED, floor)
            continue
        if text.startswith("=", end):
            end = _padded(text, end)
        lines = [(start, end)]
        nxt = _NEXT_LINE_RE.match(text, end)
        while nxt is not None:
            lines.append(nxt.span(1))
            nxt = _NEXT_LINE_RE.match(text, nxt.end(1))
        floor = lines[-1][1]
        _block(text, lines, items, keys, result)
        at = img.find(_NEED, floor)


def _quiet(text: str, img: bytes, at: int) -> bool:
    """Whether `_blocks` would turn away every run of ``text`` before decoding one.

    ``at``: where the first run is, in ``img``, ``text``'s base64 image.

    The runs and the tests of `_blocks`, in its order, with one more: a
    CamelCase name on a line of its own, which `_b64` would refuse (not at the
    text's start, where `_block` also tries the run cut by one to three
    characters). False for anything else, which the walk then judges.
    """
    find = img.find
    floor = 0
    while at >= 0:
        end = find(b" ", at)
        if end < 0:
            end = len(img)
        if img[at - 1] == _EXTEND and at > floor:
            at = max(floor, img.rfind(b" ", floor, at) + 1)
        floor = end
        run = text[at:end]
        if not run.lstrip(_HEX_DIGITS):
            if not len(run) % 2 and run[0] in _HEX_LEADS:
                raw = bytes.fromhex(run)
                if raw.isascii() or raw[0] == _SEQUENCE:
                    return False
        elif run[1:2] in "xX" and run[0] == "0" and not run[2:].lstrip(_HEX_DIGITS):
            if not len(run) % 2:
                return False
        elif run.islower() or run.isupper():
            pass
        elif (
            not at
            or text.startswith("=", end)
            or _CAMEL_RE.fullmatch(run) is None
            or _NEXT_LINE_RE.match(text, end) is not None
        ):
            return False
        at = find(_NEED, end)
    return True


def _padded(text: str, end: int) -> int:
    pad = end
    while pad < len(text) and pad - end < 2 and text[pad] == "=":
        pad += 1
    return pad


def _block(
    text: str, lines: list[tuple[int, int]], items: list[_Item], keys: list[_Item], result: Walk
) -> None:
    """Decode a block whole; failing that, each of its lines long enough to be a run."""
    start, end = lines[0][0], lines[-1][1]
    joined = "".join(text[s:e] for s, e in lines)
    if _try_run(joined, start, end, items, keys, result):
        return
    if start == 0 and joined.lstrip(_HEX_DIGITS):  # base64 only: hex has no groups
        # The text may be a window cut from a larger one (the pipeline scans
        # large texts in overlapping windows), its first run cut mid-group.
        for cut in (1, 2, 3):
            if _try_run(joined[cut:], start, end, items, keys, result):
                return
    for s, e in lines if len(lines) > 1 else ():
        if e - s >= _MIN_RUN:
            _try_run(text[s:e], s, e, items, keys, result)
    if len(lines) == 1 and ("-" in joined or "_" in joined):
        # A standard run glued to a word by "-" or "_": its longest piece without them.
        core = max(_GLUE_RE.split(joined), key=len)
        if len(core) >= _MIN_RUN:
            at = text.index(core, start, end)
            _try_run(core, at, at + len(core), items, keys, result)


def _try_run(
    run: str, start: int, end: int, items: list[_Item], keys: list[_Item], result: Walk
) -> bool:
    """Decode one run as hex or base64; True when it was text or a key."""
    if not run.lstrip(_HEX_DIGITS):
        if len(run) % 2:
            return False
        result.decoded_chars += len(run)
        return _found(bytes.fromhex(run), start, end, items, keys)
    raw = _b64(run, result)
    return raw is not None and _found(raw, start, end, items, keys)


def _b64(run: str, result: Walk) -> bytes | None:
    """The bytes of a base64 run, or None when it is a word, a name or not base64."""
    body = run.rstrip("=")
    if body.islower() or body.isupper() or _CAMEL_RE.fullmatch(body) is not None:
        return None
    if "-" in body or "_" in body:
        if "+" in body or "/" in body:
            return None  # two alphabets: a path or an identifier
        body = body.translate(_URLSAFE)
    if len(body) % 4 == 1:
        body = body[:-1]  # a stray character, as in a run cut at a window's edge
    try:
        if len(body) > 2 * _SNIFF:
            result.decoded_chars += _SNIFF
            head = base64.b64decode(body[:_SNIFF], validate=True)
            if _as_text(head) is None and not _may_be_key(head):
                return None
        result.decoded_chars += len(body)
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _found(raw: bytes, start: int, end: int, items: list[_Item], keys: list[_Item]) -> bool:
    """Record decoded bytes as text or as a private key; True when they were either."""
    text = _as_text(raw)
    if text is not None:
        items.append((start, end, text))
        return True
    if is_private_key(raw):
        keys.append((start, end, base64.b64encode(raw).decode("ascii")))
        return True
    return False


# Bytes of ordinary text: printable ASCII, tab, line breaks, form feed, escape
# (colour codes in logs) and the bytes UTF-8 uses for everything else.
_TEXT_BYTES = bytes([9, 10, 12, 13, 27, *range(0x20, 0x7F), *range(0x80, 0xF5)])
_MIN_TEXT = 6


def _as_text(raw: bytes) -> str | None:
    """``raw`` as text, or None when it is binary (an image, a hash, key material).

    A few bytes that are not text (one in 16) are allowed, so that a stray
    byte appended to a secret does not hide it.
    """
    if len(raw) < _MIN_TEXT:
        return None
    if b"\0" in raw and len(raw) % 2 == 0 and not raw[1::2].strip(b"\0"):
        raw = raw.decode("utf-16-le", "replace").encode("utf-8")  # UTF-16 ASCII text
    bad = len(raw.translate(None, _TEXT_BYTES))
    if bad * 16 > len(raw):
        return None
    text = raw.decode("utf-8", "replace")
    if (bad + text.count("\ufffd")) * 16 > len(text):
        return None
    return text


# ---------------------------------------------------------------------------
# Private keys in DER
# ---------------------------------------------------------------------------

_OPENSSH_MAGIC = b"openssh-key-v1\0"
# PKCS#5 (PBES1, PBES2) and PKCS#12 password-based encryption algorithm ids.
_PBE_OIDS = (b"\x2a\x86\x48\x86\xf7\x0d\x01\x05", b"\x2a\x86\x48\x86\xf7\x0d\x01\x0c\x01")
_SEQUENCE, _INTEGER, _OCTETS, _OID = 0x30, 0x02, 0x04, 0x06
_Tlv = tuple[int, int, int]  # tag, value start, value end (may lie past the data: cut off)


def _may_be_key(raw: bytes) -> bool:
    return raw[:1] == b"\x30" or raw.startswith(_OPENSSH_MAGIC)


def _tlv(raw: bytes, pos: int) -> _Tlv | None:
    if pos + 2 > len(raw):
        return None
    tag, first = raw[pos], raw[pos + 1]
    pos += 2
    if first < 0x80:
        return tag, pos, pos + first
    width = first - 0x80
    if not 1 <= width <= 3 or pos + width > len(raw):
        return None
    length = int.from_bytes(raw[pos : pos + width], "big")
    if length < 0x80 or raw[pos] == 0:
        return None  # not the shortest form: DER never writes that
    return tag, pos + width, pos + width + length


def _elements(raw: bytes, start: int, end: int, limit: int) -> list[_Tlv]:
    """Up to ``limit`` elements of a constructed value; the last may be cut off with ``raw``."""
    out: list[_Tlv] = []
    pos = start
    while pos < min(end, len(raw)) and len(out) < limit:
        el = _tlv(raw, pos)
        if el is None or el[2] > end:
            break
        out.append(el)
        pos = el[2]
    return out


def is_private_key(raw: bytes) -> bool:
    """Whether ``raw`` is a private key: DER (PKCS#1, PKCS#8, encrypted PKCS#8, SEC1) or OpenSSH.

    A structural check decides cheaply; a cut-off key counts when what is
    there has the shape. For a whole traditional RSA or DSA key, where a run of
    integers is the only shape, cryptography's loader confirms it (an
    encrypted key asks for a password, which still means a key). Public keys,
    certificates and signatures have other shapes and are not keys.
    """
    if raw.startswith(_OPENSSH_MAGIC):
        return True
    if len(raw) > _MAX_DER:
        return False
    outer = _tlv(raw, 0)
    if outer is None or outer[0] != _SEQUENCE:
        return False
    whole = outer[2] == len(raw)
    els = _elements(raw, outer[1], outer[2], 10)
    if len(els) < 2:
        return False
    (t1, s1, e1), (t2, s2, e2) = els[0], els[1]
    t3 = els[2][0] if len(els) > 2 else None
    if t1 == _SEQUENCE:
        # EncryptedPrivateKeyInfo: {algorithm, encrypted data}; a public key has a BIT STRING.
        alg = _elements(raw, s1, e1, 1)
        return (
            t2 == _OCTETS
            and bool(alg)
            and alg[0][0] == _OID
            and raw[alg[0][1] : alg[0][2]].startswith(_PBE_OIDS)
        )
    if t1 != _INTEGER or raw[s1:e1] not in (b"\x00", b"\x01"):
        return False
    if t2 == _SEQUENCE:
        # PrivateKeyInfo / OneAsymmetricKey: {version, algorithm, key}
        alg = _elements(raw, s2, e2, 1)
        return t3 == _OCTETS and bool(alg) and alg[0][0] == _OID
    if t2 == _OCTETS:
        # SEC1 ECPrivateKey: {1, key, [0] parameters, [1] public key}
        return raw[s1:e1] == b"\x01" and 16 <= e2 - s2 <= 72 and t3 in (0xA0, 0xA1)
    if t2 != _INTEGER or raw[s1:e1] != b"\x00" or e2 - s2 < 64:
        return False
    # Traditional RSA {0, n, e, d, p, q, dp, dq, qinv} or DSA {0, p, q, g, y, x}.
    ints = [el for el in els if el[0] == _INTEGER]
    if len(ints) != len(els):
        return False
    if not whole:
        return len(els) >= 4
    if len(els) not in (6, 9):
        return False
    try:
        load_der_private_key(raw, None, unsafe_skip_rsa_key_validation=True)
    except TypeError:
        return True  # encrypted: a password was needed
    except UnsupportedAlgorithm:
        return True
    except ValueError:
        return False
    return True
