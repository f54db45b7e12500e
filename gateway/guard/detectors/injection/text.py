"""Normalisation and words: what every rule family reads.

The text is casefolded and split into words once per call (C-level passes);
non-ASCII text whose only non-ASCII characters are typographic quotes and
dashes takes the ASCII path; other text pays for NFKC and casefolding, and
for homoglyph and invisible-character handling only when one-character and
byte searches say those can matter.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from itertools import repeat
from typing import Final, Protocol

from gateway import compiled

# Invisible characters an attacker uses to split trigger words or hide text.
_ZERO_WIDTH: Final = "\u200b\u200c\u200d\u2060\ufeff\u180e\u2061\u2062\u2063\u2064\u00ad"
_BIDI: Final = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_TAG_FIRST: Final = 0xE0000
_TAG_LAST: Final = 0xE007F

_STRIP_TABLE: Final[dict[int, None]] = {ord(c): None for c in _ZERO_WIDTH + _BIDI} | {
    cp: None for cp in range(_TAG_FIRST, _TAG_LAST + 1)
}
_INVISIBLE_BMP: Final = _ZERO_WIDTH + _BIDI
# Tag characters in UTF-8 (U+E0000..U+E007F all start with these bytes).
_TAG_UTF8: Final = b"\xf3\xa0"

# Only letters that render like Latin in common fonts. A whole Cyrillic or
# Greek text becomes gibberish Latin, which matches no rule, so this is safe.
_HOMOGLYPHS: Final = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ӏ": "l",
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ς": "s",
        "ɡ": "g",
        "ı": "i",
        "ǀ": "l",
    }
)
_LOOKALIKES: Final = "".join(chr(c) for c in _HOMOGLYPHS)
_MIXED_SCRIPT: Final = re.compile(f"[a-z][{_LOOKALIKES}]|[{_LOOKALIKES}][a-z]")
# A look-alike's UTF-8 starts with one of these bytes, and a Latin letter is
# one of a-z: memchr-speed necessary conditions for the regex above.
_LOOKALIKE_LEADS: Final = tuple(dict.fromkeys(c.encode()[:1] for c in _LOOKALIKES))
_NOT_LATIN: Final = bytes(b for b in range(256) if not 0x61 <= b <= 0x7A)
# Typographic punctuation that NFKC keeps; mapped so that words split (and
# "don’t" matches "don't") the same way as in ASCII text.
_PUNCT: Final = (
    ("\u2018", "'"),
    ("\u2019", "'"),
    ("\u02bc", "'"),
    ("\u201c", '"'),
    ("\u201d", '"'),
    ("\u201e", '"'),
    ("\u00ab", '"'),
    ("\u00bb", '"'),
    ("\u2013", "-"),
    ("\u2014", "-"),
    ("\u2026", "..."),
    ("\u3002", "."),
    ("\u3001", ","),
)

# Modest leetspeak (digits for letters), applied to a second copy only when
# it turns a mixed word into a trigger word, so digits in ordinary text cost
# nothing.
_LEET: Final = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t"})

# Words are split at ASCII punctuation and whitespace ("openai's" -> "openai",
# "s"); bytes of multi-byte characters pass through, so this is one C pass.
_ASCII_SEP: Final = bytes(b if chr(b).isalnum() else 32 for b in range(128)) + bytes(
    range(128, 256)
)
_WORD: Final = re.compile(r"[^\W_]+")


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


# CPython stores a string at four bytes per character exactly when it holds
# a character above U+FFFF (tags, emoji), which `sys.getsizeof` shows in
# constant time. With another string layout, every string may.
_UCS4_OVERHEAD: Final = sys.getsizeof("\U00010000") - 8
_SIZE_SHOWS_WIDTH: Final = (
    sys.getsizeof("a\U00010000") - _UCS4_OVERHEAD == 12
    and sys.getsizeof("\uffff" * 3) - _UCS4_OVERHEAD < 16
)


def _may_be_astral(text: str) -> bool:
    return not _SIZE_SHOWS_WIDTH or sys.getsizeof(text) - _UCS4_OVERHEAD >= 4 * (len(text) + 1)


def _has_invisible(text: str) -> bool:
    """Whether `text` holds a zero-width, bidi or tag character."""
    # Twenty one-character searches (memchr-like) and one byte search beat
    # a regex scan, which costs ~10 ns per character.
    return any(map(text.__contains__, _INVISIBLE_BMP)) or (
        _may_be_astral(text) and _TAG_UTF8 in text.encode("utf-8", "surrogatepass")
    )


def _fold(text: str, invisible: bool, plain: bool = False) -> tuple[str, bytes]:
    """Casefolded non-ASCII text, and its UTF-8 (which the word split reads).

    `plain`: the typographic punctuation of `text` is already replaced.
    """
    low = text.translate(_STRIP_TABLE) if invisible else text
    if not unicodedata.is_normalized("NFKC", low):
        low = unicodedata.normalize("NFKC", low)
        plain = False  # NFKC can make such punctuation ("\ufe58" -> "\u2014")
    low = low.casefold()
    if low.isascii():
        return low, low.encode("ascii")
    if not plain:
        low = _plain_punctuation(low)
    raw = low.encode("utf-8", "surrogatepass")
    # Translating costs a dict lookup per character, and only a word that
    # mixes Latin with look-alike letters ("іgnore") needs it; byte checks
    # rule out English and all-Cyrillic text before the regex scan.
    if (
        any(map(raw.__contains__, _LOOKALIKE_LEADS))
        and raw.translate(None, _NOT_LATIN)
        and _MIXED_SCRIPT.search(low)
    ):
        low = low.translate(_HOMOGLYPHS)
        raw = low.encode("utf-8", "surrogatepass")
    return low, raw


def _plain_punctuation(text: str) -> str:
    for char, repl in _PUNCT:
        text = text.replace(char, repl)
    return text


def _casefolded(text: str, invisible: bool | None = None) -> str:
    """NFKC, casefold, homoglyphs mapped, invisibles stripped; layout kept."""
    if text.isascii():
        return text.lower()
    if invisible is None:
        invisible = _has_invisible(text)
    return _fold(text, invisible)[0]


def _normalise(text: str) -> str:
    """Casefolded with whitespace collapsed: what the phrase rules read."""
    return " ".join(_casefolded(text).split())


def _split_words(low: str, raw: bytes) -> list[str]:
    """Words of casefolded `low`, whose UTF-8 is `raw`."""
    split = raw.translate(_ASCII_SEP)
    if len(raw) == len(low):
        return split.decode("ascii").split()
    fast = split.decode("utf-8", "surrogatepass").split()
    # One C pass over the joined words instead of a method call per word.
    if "".join(fast).isalnum():
        return fast
    words: list[str] = []
    for word in fast:
        if word.isalnum():
            words.append(word)
        else:
            # Emoji and other symbols glued to a word ("🔓jailbreak").
            words.extend(_WORD.findall(word))
    return words


def feature_sum(
    words: AbstractSet[str], weights: Mapping[str, int], aliases: Mapping[str, str]
) -> tuple[int, int]:
    """(number of distinct features, sum of their weights) of a word set: a
    feature is a word, or the word its alias names."""
    if aliases and not aliases.keys().isdisjoint(words):
        words = {aliases.get(w, w) for w in words}
    return len(words), sum(map(weights.get, words, repeat(0)))


class _PyVocabulary:
    """Words to look for in ASCII text, and integer weights and aliases (word
    -> the word whose weight it takes) to sum as it is read;
    `_wordset.Vocabulary` in C."""

    __slots__ = ("_aliases", "_weights")

    def __init__(
        self,
        words: Iterable[str],
        weights: Mapping[str, int] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        for word in (*words, *(weights or {}), *(aliases or {}), *(aliases or {}).values()):
            if not isinstance(word, str):
                raise TypeError("Vocabulary() takes str words")
        if not all(isinstance(v, int) for v in (weights or {}).values()):
            raise TypeError("Vocabulary() takes integer weights")
        self._weights = dict(weights or {})
        self._aliases = dict(aliases or {})

    def scan(self, text: str, /) -> tuple[AbstractSet[str], int, int, int, int]:
        """(a set holding those of `words` that occur in `text`, its number
        of distinct words, its number of words, its number of distinct
        features, the sum of their weights); words are maximal runs of ASCII
        letters and digits.

        The set may hold other words of the text too: its readers look up
        only `words`. Here it holds them all, since the intersection would
        cost more than it saves; in C, only those of `words` become str
        objects.
        """
        if not text.isascii():
            raise ValueError("scan() takes ASCII text")
        toks = _tokens(text)
        words = set(toks)
        features, total = feature_sum(words, self._weights, self._aliases)
        return words, len(words), len(toks), features, total


class Scan(Protocol):
    """What `_PyVocabulary` and `_wordset.Vocabulary` both are."""

    def scan(self, text: str, /) -> tuple[AbstractSet[str], int, int, int, int]: ...


def _vocabulary_type() -> Callable[
    [Iterable[str], Mapping[str, int] | None, Mapping[str, str] | None], Scan
]:
    # The compiled scan is optional (see `compiled`). Typed by what both
    # give, not as the Python class: the compiled gateway checks the type.
    module = compiled.load("gateway.guard.detectors.injection._wordset")
    return _PyVocabulary if module is None else module.Vocabulary


Vocabulary: Final = _vocabulary_type()


def _ascii_lowering() -> Callable[[str], str]:
    # ``str.lower`` for ASCII text; the compiled one is branch-free and
    # vectorised (see `_ascii.h`), where CPython looks each byte up.
    module = compiled.load("gateway.guard.detectors.injection._wordset")
    return str.lower if module is None else module.lower


ascii_lower: Final = _ascii_lowering()


def _tokens(s: str) -> list[str]:
    """Words of casefolded text; the same split the model was trained on."""
    if s.isascii():
        return s.encode("ascii").translate(_ASCII_SEP).decode("ascii").split()
    return _split_words(s, s.encode("utf-8", "surrogatepass"))


# Escapes of JSON and YAML double-quoted strings, undone before the rules
# read a tool result. "\\t" becomes a space: a tab between two words.
_STRING_ESCAPES: Final = (("\\n", "\n"), ("\\r", "\n"), ("\\t", " "), ('\\"', '"'), ("\\/", "/"))
# What the character after a backslash stands for, of `_STRING_ESCAPES`.
_ESCAPED: Final[dict[str, str]] = {escaped[1]: char for escaped, char in _STRING_ESCAPES}
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")


def _unescape(text: str) -> str:
    """`_STRING_ESCAPES` replaced in turn, then each `\\uXXXX` (four hex
    digits, not a lone surrogate half) by its character.

    In one pass: a search per escape was a pass over the whole text each,
    and a two-character search is no memchr (~1 ns a character). The text is
    split at its backslashes once; each piece after the first starts with the
    character its backslash escapes. This reads the same pairs as the
    replacements in turn: a pair's second character is never a backslash, so
    pairs cannot overlap; no replacement of `_STRING_ESCAPES` yields a
    backslash, so none makes a pair for a later one; and what a `\\uXXXX`
    yields (a backslash too) was not read again before either
    (tests/guard/injection/test_unescape.py holds the two equal).
    """
    pieces = text.split("\\")
    out = [pieces[0]]
    for k in range(1, len(pieces)):
        piece = pieces[k]
        if piece:
            char = _ESCAPED.get(piece[0])
            if char is not None:
                out.append(char + piece[1:])
                continue
            if (
                piece[0] == "u"
                and len(piece) >= 5
                and all(c in _HEX_DIGITS for c in piece[1:5])
                and not 0xD800 <= (code := int(piece[1:5], 16)) <= 0xDFFF
            ):
                out.append(chr(code) + piece[5:])
                continue
        out.append("\\" + piece)
    return "".join(out)
