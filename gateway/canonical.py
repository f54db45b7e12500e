"""Canonical JSON, byte-compatible with the Reef reference (``canonical.ts``).

The canonical form is what the reference gets from ``JSON.stringify`` applied to
a JavaScript value with object keys sorted, so everything here reasons about
the JavaScript view of a Python value:

* a ``str`` is the UTF-16 code unit sequence ``s.encode("utf-16-le",
  "surrogatepass")``. Lone surrogates are written as lowercase ``\\udXXX``
  escapes (well-formed ``JSON.stringify``); a high surrogate code point
  directly followed by a low one is a pair in UTF-16, so it is written as the
  astral character it encodes, exactly as the reference would see it.
* object keys are sorted by UTF-16 code units, which differs from Python's
  code point order when a key holds a character at or above U+E000.
* every number is an IEEE-754 double: ``int`` is converted with correct
  rounding (``9007199254740993`` -> ``9007199254740992``) and the text is
  ECMAScript ``Number::toString`` (``1e+21``, ``1e-7``, ``-0`` -> ``0``).

The reference's ``undefined`` (dropped members) has no Python counterpart;
callers omit the key instead.

Two implementations produce the same text: ``_fast_str`` hands plain values to
the C JSON encoder after a cheap structural pre-check, and ``_slow_str`` is the
direct transcription of the rules above. The fast path only answers when the C
encoder provably agrees (see ``_plain``); otherwise the slow path decides.
``canonical_bytes`` hands the same plain values to orjson when it is installed
(``gateway.fastjson``): with sorted keys it writes the C encoder's text, UTF-8
encoded, and refuses lone surrogates as that encoding does
(tests/test_canonical.py holds the three to each other).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Final

from gateway import compiled, fastjson

__all__ = [
    "CanonicalError",
    "canonical_bytes",
    "canonical_str",
    "digest",
    "sha256_hex",
]

_FINITE_MSG = "canonical JSON requires finite numbers"
_UNSUPPORTED_MSG = "unsupported canonical JSON value"

# Integers in this range are doubles exactly, and Number::toString prints a
# double below 1e21 with all its integer digits, so str(int) is already exact.
_MAX_EXACT_INT = 2**53

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# A key with a character at or above U+E000 may sort differently in UTF-16
# (astral characters start with a U+D800..U+DBFF code unit); such dicts are
# left to the slow path.
_UTF16_ORDER_SENSITIVE = "\ue000"

_CODEC = fastjson.CODEC

_C_ENCODER = json.JSONEncoder(
    ensure_ascii=False,
    allow_nan=False,
    sort_keys=True,
    separators=(",", ":"),
    check_circular=False,
)
# encode_basestring(ensure_ascii=False) escapes exactly what JSON.stringify
# escapes (", \\, \b \f \n \r \t, other C0 as lowercase \u00xx) and writes
# everything else raw; only surrogates need extra care.
_encode_basestring = json.encoder.encode_basestring


class CanonicalError(TypeError):
    """The value has no canonical JSON form (messages match the reference)."""


def canonical_str(value: object) -> str:
    """The canonical JSON text of ``value``; always strictly UTF-8 encodable."""
    try:
        text = _fast_str(value)
        if text is not None and not _has_surrogate(text):
            return text
        return _slow_str(value)
    except RecursionError:
        # Cyclic or absurdly deep values: the reference overflows its stack too.
        raise CanonicalError(_UNSUPPORTED_MSG) from None


def canonical_bytes(value: object) -> bytes:
    """UTF-8 bytes of the canonical JSON of ``value``; what hashes cover."""
    try:
        if _plain(value):
            if _CODEC is not None:
                try:
                    return _CODEC.dumps_sorted(value)
                except TypeError:
                    # A lone surrogate, or nesting past orjson's limit: the
                    # paths below decide.
                    pass
            try:
                return _C_ENCODER.encode(value).encode("utf-8")
            except UnicodeEncodeError:
                # A surrogate somewhere: the strict encoding doubles as the scan.
                pass
        return _slow_str(value).encode("utf-8")
    except RecursionError:
        raise CanonicalError(_UNSUPPORTED_MSG) from None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: object) -> str:
    """Lowercase hex SHA-256 of the canonical bytes of ``value``."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


# ---------------------------------------------------------------------------
# Fast path


def _fast_str(value: object) -> str | None:
    """C-encoded JSON when that is provably canonical apart from surrogates.

    Callers still have to reject output containing surrogate code points.
    Returns None when the value needs the slow path.
    """
    if not _plain(value):
        return None
    return _C_ENCODER.encode(value)


def _py_plain(value: object) -> bool:
    """True when the C encoder's output is canonical, surrogates aside.

    Exact types only, since subclasses may override comparison or iteration.
    The C encoder would silently turn non-str keys into strings and print
    floats with Python's repr, so those cases go to the slow path. Scalars
    inside containers are checked inline: this walk runs for every record.
    """
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str or (not k.isascii() and max(k) >= _UTF16_ORDER_SENSITIVE):
                return False
            kind = type(v)
            if kind is str or v is None or kind is bool:
                continue
            # Numbers are a record's other common members: checked here, as
            # below, without a call each.
            if kind is int:
                if -_MAX_EXACT_INT <= v <= _MAX_EXACT_INT:
                    continue
                return False
            if kind is float:
                if 1e-4 <= abs(v) < 1e16 and not v.is_integer():
                    continue
                return False
            if not _py_plain(v):
                return False
        return True
    if type(value) is str or value is None or type(value) is bool:
        return True
    if type(value) is int:
        return -_MAX_EXACT_INT <= value <= _MAX_EXACT_INT
    if type(value) is float:
        # float.__repr__ writes fixed notation iff 1e-4 <= |x| < 1e16 and then
        # matches Number::toString, except that it adds ".0" to integers.
        return 1e-4 <= abs(value) < 1e16 and not value.is_integer()
    if type(value) is list or type(value) is tuple:
        for v in value:
            if type(v) is str or v is None or type(v) is bool:
                continue
            if not _py_plain(v):
                return False
        return True
    return False


def _plain_check() -> Callable[[object], bool]:
    module = compiled.load("gateway._plain")
    return _py_plain if module is None else module.plain


# The same answer from `_plain.c`, when it is built.
_plain: Final = _plain_check()


# ---------------------------------------------------------------------------
# Slow path: the rules, one by one


def _slow_str(value: object) -> str:
    parts: list[str] = []
    _emit(value, parts)
    return "".join(parts)


def _emit(value: object, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, int):
        out.append(_int_str(value))
    elif isinstance(value, float):
        out.append(_number_str(float(value)))
    elif isinstance(value, Mapping):
        _emit_object(value, out)
    elif isinstance(value, list | tuple):
        out.append("[")
        first = True
        for item in value:
            if not first:
                out.append(",")
            first = False
            _emit(item, out)
        out.append("]")
    else:
        raise CanonicalError(_UNSUPPORTED_MSG)


def _emit_object(value: Mapping[object, object], out: list[str]) -> None:
    members: list[tuple[bytes, str, object]] = []
    seen: set[str] = set()
    for key, item in value.items():
        if not isinstance(key, str):
            raise CanonicalError(_UNSUPPORTED_MSG)
        quoted = _quote(key)
        # Keys that are distinct in Python but the same UTF-16 string (a
        # surrogate pair spelled as two code points vs the astral character)
        # would give an object with a duplicate member; refuse rather than
        # pick one.
        if quoted in seen:
            raise CanonicalError(_UNSUPPORTED_MSG)
        seen.add(quoted)
        # Big-endian UTF-16 bytes compare exactly like UTF-16 code units.
        members.append((key.encode("utf-16-be", "surrogatepass"), quoted, item))
    members.sort(key=lambda m: m[0])
    out.append("{")
    first = True
    for _, quoted, item in members:
        if not first:
            out.append(",")
        first = False
        out.append(quoted)
        out.append(":")
        _emit(item, out)
    out.append("}")


def _has_surrogate(s: str) -> bool:
    if s.isascii():
        return False
    try:
        # Much faster than a regex scan, and surrogates are the only code
        # points strict UTF-8 refuses.
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _quote(s: str) -> str:
    if not _has_surrogate(s):
        return _encode_basestring(s)
    # Re-read the string as UTF-16: paired surrogates merge into the astral
    # character, the lone ones remain and are escaped like JSON.stringify.
    merged = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    pieces: list[str] = []
    start = 0
    for m in _SURROGATE_RE.finditer(merged):
        pieces.append(_encode_basestring(merged[start : m.start()])[1:-1])
        pieces.append(f"\\u{ord(m.group()):04x}")
        start = m.end()
    pieces.append(_encode_basestring(merged[start:])[1:-1])
    return '"' + "".join(pieces) + '"'


def _int_str(value: int) -> str:
    if -_MAX_EXACT_INT <= value <= _MAX_EXACT_INT:
        return str(int(value))
    try:
        as_double = float(value)  # correctly rounded, ties to even, as JSON.parse
    except OverflowError:
        # Beyond the double range the reference would hold Infinity.
        raise CanonicalError(_FINITE_MSG) from None
    return _number_str(as_double)


def _number_str(value: float) -> str:
    """ECMAScript Number::toString(10) for a double."""
    if not math.isfinite(value):
        raise CanonicalError(_FINITE_MSG)
    if value == 0:
        return "0"  # also -0
    # repr() yields the shortest digit string that round-trips, which is the
    # digit string Number::toString uses; only the layout differs.
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign = "-"
        text = text[1:]
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    # n: position of the decimal point relative to the digits, as in the spec
    # (value = 0.d1d2...dk * 10**n).
    n = len(int_part) + (int(exp_text) if exp_text else 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = f"e+{e}" if e >= 0 else f"e-{-e}"
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + exp
    return sign + body
