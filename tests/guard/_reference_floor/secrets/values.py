"""Value heuristics: placeholders, references, names and random-looking values."""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

from tests.guard._reference_floor.secrets.common import _A, _words

# Most values are short. Under password and strong names a long one is judged
# too (a key or certificate pasted as one base64 string, a session token), up to
# a bound that keeps the work per keyword hit constant on hostile input.
_SHORT_VALUE = 256
_LONG_VALUE = 8192

# ---------------------------------------------------------------------------
# Value heuristics
# ---------------------------------------------------------------------------


def _any_case(*words: str, after: str = "") -> str:
    """Alternatives for case-insensitive words, each led by a plain literal.

    Under a global re.I a search has no first-character filter and tries every
    branch at every position; led by literals in both cases it is a set scan.
    """
    return "|".join(f"{c}(?i:{w[1:]}){after}" for w in words for c in (w[0], w[0].upper()))


# Fillers used in docs and scanner fixtures.
_MARKER_RE = re.compile(
    r"\*\*\*|###|•••|\.\.\.|<[^>]{0,60}>|"
    + _any_case("xxxx", "your", "placeholder", "redacted", "replace", "insert", "dummy", "fake")
    + "|"
    + _any_case("here", after="(?![a-zA-Z])"),
    _A,
)
# Repeating the group reference (not "\1{5}") keeps it out of re's general repeat machinery.
_RUN_RE = re.compile(r"([A-Za-z0-9])\1\1\1\1\1", _A)


def _seq_pattern() -> str:
    """Seven letters in alphabetical order ("abcdefg", ..., "tuvwxyz").

    Every such run contains g, n or u (seven apart), so the search anchors on
    those three letters rather than on any of twenty.
    """
    abc = "abcdefghijklmnopqrstuvwxyz"
    alternatives = []
    for a in (6, 13, 20):
        tails = [
            abc[a + 1 : i + 7] + (f"(?<={abc[i : i + 7]})" if i < a else "")
            for i in range(min(a, 19), max(0, a - 6) - 1, -1)
        ]
        alternatives.append(f"{abc[a]}(?:{'|'.join(tails)})")
    return "|".join(alternatives)


_SEQ_RE = re.compile(_seq_pattern(), _A)
# Digits or symbols other than word separators mean "not just words".
_WORDY_BREAK_RE = re.compile(r"[^A-Za-z_\-. /]", _A)
_WORD_PARTS_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^A-Za-z]+", _A)
_TOKENISH_RE = re.compile(r"[A-Za-z0-9+/=_.~-]+", _A)
_WS_RE = re.compile(r"\s")
_UUID_RE = re.compile(
    r"\{?[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}?", _A
)
_HEX_RE = re.compile(r"[0-9A-Fa-f]+", _A)
# Lowercase words or short pieces joined by separators: "shorter-version". Each
# piece is taken whole by the first way that fits it (atomic): with a choice left
# open per piece, a failing "ab-ab-ab-...-X" took 2^pieces steps.
_SLUG_PIECE = r"(?>[a-z]+(?![a-z0-9])|[0-9]+(?![a-z0-9])|[a-z0-9]{1,4}(?![a-z0-9]))"
_SLUG_RE = re.compile(rf"{_SLUG_PIECE}(?:[-_.]{_SLUG_PIECE})+", _A)
_HASH_PREFIX_RE = re.compile(r"(?:sha1|sha256|sha384|sha512|md5)[-:=]", re.I | _A)
_B64_RE = re.compile(r"[A-Za-z0-9+/_-]+={0,2}", _A)

# Whole values that say "no real secret here".
_PLACEHOLDER_VALUES = _words(
    """
    password passwd pass pwd secret token key apikey api_key changeme changeit example
    sample dummy test testing fake foo bar baz foobar qwerty admin root user username
    none null nil undefined true false yes no on off redacted removed hidden masked
    placeholder value default string str int bool boolean number any object bytes text
    char varchar optional secretstr sensitive required todo tbd xxx abc abc123 123456
    12345678 password1 password123 secret123 mypassword mysecret my_password my_secret
    letmein welcome guest demo temp empty unset notset
    """
)
# Values that are references, templates or encrypted envelopes, not secrets.
_REF_PREFIXES = (
    "$", "%", "{", "[", "(", "<%", "#", "@{", "@microsoft", "!", "&", "*", "ENC[",
    "vault:", "arn:", "file:", "env:", "secret:", "ref+", "op://", "secretref:", "sm://",
    "projects/", "process.env", "os.environ", "os.getenv", "getenv(", "ENV[",
    "System.getenv",
)  # fmt: skip
_TEMPLATE_RE = re.compile(
    r"\$\{\{?\s{0,2}[A-Za-z_][\w.:\[\]'\"-]{0,80}(?:[:?]?[-=?+][^}\s]{0,80})?\s{0,2}\}\}?"
    r"|\$\([A-Za-z_][^)]{0,80}\)|\{\{-?\s{0,2}[\w.$|()\[\]'\" -]{1,80}\s{0,2}-?\}\}"
    r"|%\([A-Za-z_]\w{0,40}\)[sd]|%[sd]|%[A-Za-z_]\w{0,40}%|\{[A-Za-z_][\w.\[\]'\"]{0,40}\}"
    r"|<%=?[^%]{0,80}%>",
    _A,
)
_CODE_REF_RE = re.compile(
    r"[A-Za-z_$][\w$]{0,60}(?:(?:\.|::|->)[A-Za-z_$][\w$]{0,60}){0,8}\s{0,2}[(\[]?", _A
)
_CHAIN_SPLIT_RE = re.compile(r"\.|::|->")
# Regular expressions quoted in code and schemas: \s, .+, [^...], (?:...), )+ ...
_REGEX_HINT_RE = re.compile(r"\\[sdwbSDWB./-]|[\])][+*?{]|\.[*+]|\[\^|\(\?[:=!<]|[\])+*]\$$", _A)
_KWARG_RE = re.compile(r"[A-Za-z_]\w{0,60}=[A-Za-z_]", _A)
_CALL_RE = re.compile(r"[A-Za-z_$][\w$.]{0,80}[ \t]{0,2}[(\[]", _A)
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,80}", _A)

_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")
_ALNUM = _LOWER | _UPPER | _DIGITS


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) if n else 0.0


def _char_classes(v: str) -> int:
    chars = set(v)
    return (
        (not chars.isdisjoint(_LOWER))
        + (not chars.isdisjoint(_UPPER))
        + (not chars.isdisjoint(_DIGITS))
        + (not chars <= _ALNUM)
    )


def _has_digit(v: str) -> bool:
    return not _DIGITS.isdisjoint(v)


def _has_marker(v: str) -> bool:
    return _MARKER_RE.search(v) is not None


def _is_wordy(v: str) -> bool:
    """Identifier- or prose-like: two or more words, no digits, no random casing."""
    if _WORDY_BREAK_RE.search(v) is not None:
        return False
    words = 0
    for part in _WORD_PARTS_RE.findall(v):
        if part[0].isalpha():
            # Random letters break into short pieces ("JVLn" -> "JV", "Ln").
            if len(part) < 3 and not (len(part) == 2 and (part.islower() or part.istitle())):
                return False
            words += 1
    return words >= 2


def _is_placeholder(v: str) -> bool:
    if len(v) > _SHORT_VALUE:
        # Placeholders say so at their start or end; deep inside kilobytes of random
        # characters a "here" or six equal letters in a row are chance.
        return _is_placeholder(v[:64]) or _is_placeholder(v[-64:])
    low = v.lower()
    if low in _PLACEHOLDER_VALUES or _has_marker(v) or "example" in low:
        return True
    if v.isupper() and "_" in v and _IDENT_RE.fullmatch(v) and not _has_digit(v):
        return True  # "REFRESH_TOKEN", "AWS_ACCESS_KEY_ID": a name standing in for a value
    if v.startswith("__") and v.endswith("__"):
        return True  # "__root__"
    if low.startswith(("my", "your", "the", "some", "example", "sample", "test_", "dummy")):
        rest = low.lstrip("_-")
        if rest.isalpha() or _is_wordy(v):
            return True
    # One repeated character, a tiny alphabet, or the alphabet itself.
    return len(set(v)) <= 2 or _RUN_RE.search(v) is not None or _SEQ_RE.search(low) is not None


def _is_reference(v: str, quoted: bool) -> bool:
    """A variable, template, expression or pattern rather than a literal value."""
    if v.startswith(_REF_PREFIXES) or _REGEX_HINT_RE.search(v) is not None:
        return True
    t = _TEMPLATE_RE.search(v)
    if t is not None:
        rest = (v[: t.start()] + v[t.end() :]).strip()
        if len(rest) < 8 or _TEMPLATE_RE.search(rest) is not None:
            return True
    if quoted:
        return False
    if _CALL_RE.match(v) is not None or _KWARG_RE.match(v) is not None:
        return True  # calls, subscripts, defaults: get_password(), env["X"], Token=None
    if _CODE_REF_RE.fullmatch(v) is None:
        return False
    if "." in v or "::" in v or "->" in v:
        # obj.attr chains are references; "s.<random>" is a token with a dot in it.
        return not any(_looks_random(p, 20) for p in _CHAIN_SPLIT_RE.split(v))
    # DB_PASSWORD, db_password, dbPassword, v4auth_header: names, not values.
    if _IDENT_RE.fullmatch(v) is None:
        return False
    if "_" in v:
        # snake_case names (pkcs8_priv_key_info_st) split into short or alphabetic parts;
        # random base64url pieces are long and mixed.
        return all(p.isalpha() or len(p) <= 8 for p in v.split("_"))
    return not _has_digit(v) and (v.isupper() or _is_wordy(v))


_LOWER_RUN_RE = re.compile(r"[a-z]+", _A)
_IDENT_PARTS_RE = re.compile(r"[A-Za-z0-9]+", _A)


def _is_identifier_like(v: str) -> bool:
    """CamelCase / snake_case / CONSTANT_CASE names, even with a digit or two.

    Random tokens have short lowercase runs (about two letters); names are made
    of words. Values that are mostly digits are left to the other checks.
    """
    digits = sum(1 for c in v if c.isdigit())
    if digits * 4 > len(v):
        return False
    runs = _LOWER_RUN_RE.findall(v)
    if runs:
        # Random base36 also has ~3.6-letter runs, so lowercase-only values need
        # longer ones than CamelCase before they count as words.
        need = 3.5 if not _UPPER.isdisjoint(v) else 4.5
        return sum(map(len, runs)) / len(runs) >= need
    # CONSTANT_CASE: at least two real words between separators.
    parts = _IDENT_PARTS_RE.findall(v)
    return sum(1 for p in parts if p.isalpha() and len(p) >= 3) >= 2


_NAME_CHARSET_RE = re.compile(r"[A-Za-z0-9_.:/-]+", _A)


def _has_name_parts(v: str) -> bool:
    """Built from names: "867139942017-EntitiesDetection-ab98", "serverlessrepo:applicationId".

    Only for values spelled like identifiers; symbol-rich values are passwords.
    """
    if _NAME_CHARSET_RE.fullmatch(v) is None:
        return False
    return any(
        len(p) >= 4 and p.isalpha() and (_is_identifier_like(p) or _is_wordy(p))
        for p in _IDENT_PARTS_RE.findall(v)
    ) or any(_is_identifier_like(p) for p in _IDENT_PARTS_RE.findall(v) if len(p) >= 8)


def _looks_random(v: str, min_len: int = 16) -> bool:
    """A machine-generated credential rather than a word, name or sentence."""
    if not min_len <= len(v) <= 1024 or _TOKENISH_RE.fullmatch(v) is None:
        return False
    if _char_classes(v) < 2 or _is_wordy(v) or _SLUG_RE.fullmatch(v) is not None:
        return False
    if _is_identifier_like(v) or _UUID_RE.search(v) is not None or _has_name_parts(v):
        return False
    return _entropy(v) >= 2.5


def _is_text_b64(v: str) -> bool:
    """Base64 that decodes to ordinary text or structured data, not key bytes."""
    if len(v) < 16 or _B64_RE.fullmatch(v) is None:
        return False
    s = v.replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    printable = sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13))
    return bool(raw) and printable / len(raw) > 0.95


def _at(text: str, literal: str, i: int) -> bool:
    # str.startswith counts a negative index from the end; never look there.
    return i >= 0 and text.startswith(literal, i)


def _left_ok(text: str, start: int, extra: str = "") -> bool:
    """The token is not the tail of a longer word."""
    if start <= 0:
        return True
    c = text[start - 1]
    return not (c.isascii() and (c.isalnum() or c in extra))


def _clean_token(tok: str, runs: bool = True) -> bool:
    return not _has_marker(tok) and not (runs and _RUN_RE.search(tok) is not None)
