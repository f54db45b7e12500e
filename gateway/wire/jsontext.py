"""JSON read strictly, so that what the gateway scans is what every upstream reads.

Parsers disagree on duplicate keys (first wins or last wins): if ours and the
upstream's disagree, text never scanned would reach the model, so they are
refused. Python also reads ``NaN`` and ``Infinity``, and ``1e999`` as
infinity, where JSON and the upstreams do not: refused too. Error messages
name the problem, never the content.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Final

from gateway import compiled, fastjson


class JSONTextError(ValueError):
    """Not JSON that every reader reads alike; the message says why, without content."""


class DuplicateKey(JSONTextError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise DuplicateKey("a JSON object has a duplicate key")
    return out


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JSONTextError("a number too large for a double (it would read as infinity)")
    return value


def _no_constant(name: str) -> object:
    raise JSONTextError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_keys, parse_float=_finite, parse_constant=_no_constant
)


def loads(text: str) -> object:
    try:
        return _DECODER.decode(text)
    except JSONTextError:
        raise
    except RecursionError as exc:
        raise JSONTextError("JSON nesting is too deep") from exc
    except json.JSONDecodeError as exc:
        raise JSONTextError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except ValueError as exc:
        # The one left is int(): Python reads at most 4300 digits (CVE-2020-10735).
        raise JSONTextError("a number has too many digits") from exc


# -- the fast reader --------------------------------------------------------
#
# orjson reads JSON several times faster than the decoder above, but keeps the
# last of duplicate keys without a word, and reads an integer past 64 bits as
# a float. Its answer is used only when it is provably the value loads() would
# return; otherwise loads() decides, so every outcome (the value, or the error
# and its message) is the stdlib path's. tests/wire/test_json_differential.py
# holds the two to that.
#
# What orjson refuses goes to loads(): invalid JSON or UTF-8, NaN, Infinity
# and numbers that overflow a double, lone surrogate escapes. What it accepts
# is proven by three checks on its value, made in one walk of it:
#
# 1. No member lost to a duplicate: counting ':' bytes. In JSON text a ':'
#    byte is either an object member's separator or a character of a string
#    (UTF-8 never uses 0x3A inside a multi-byte character; no number or
#    literal has one). A string's ':' characters are its ':' bytes, except
#    those spelled \u003a, which the body is checked not to have. So the
#    value's members plus the ':' characters of its strings (keys included)
#    come to the body's ':' bytes unless members were lost, and each member
#    lost to a later duplicate takes its separator (and maybe more) with it:
#    equal counts mean no key repeats. (orjson.dumps writes exactly one ':'
#    per member and a string's ':' as they are: the count is that of the
#    value written back, without writing it.)
#
# 2. No integer read as a float: orjson reads an integer outside
#    [-2**63, 2**64) as a float, which is then at least 2**63 in size, so a
#    value holding such a float goes to loads(). Smaller floats came from
#    float tokens, and orjson and Python's float() both round correctly.
#
# 3. Nesting no deeper than orjson.dumps writes (254 levels), which keeps
#    the fast path far from Python's recursion limit in what walks the value.


class _Undecided:
    __slots__ = ()


UNDECIDED: Final = _Undecided()

# The escape of ':' in either case, and a few neighbours (the escapes of
# digits and ;<=>?, which no serialiser needs): those bodies go to loads().
_COLON_ESCAPES = b"\\u003"
_MAX_DEPTH = 254
_WIDE = 2.0**63


def fast_loads(data: bytes, codec: fastjson.Codec) -> object:
    """What ``loads(data.decode())`` returns, when orjson proves it; else UNDECIDED."""
    try:
        value = codec.loads(data)
    except ValueError:
        return UNDECIDED
    return value if _proven(data, value) else UNDECIDED


def _py_proven(data: bytes, value: object) -> bool:
    """The three checks above; `_colons.proven` in C."""
    if _COLON_ESCAPES in data:
        return False
    count = _value_colons(value, 0)
    return count >= 0 and count == data.count(b":")


def _value_colons(value: object, depth: int) -> int:
    """Members plus ':' characters in ``value``, or -1 when it is not proven."""
    if type(value) is str:
        return value.count(":")
    if type(value) is dict:
        if depth >= _MAX_DEPTH:
            return -1
        total = len(value)
        for key, item in value.items():
            inner = _value_colons(item, depth + 1)
            if type(key) is not str or inner < 0:
                return -1
            total += key.count(":") + inner
        return total
    if type(value) is list:
        if depth >= _MAX_DEPTH:
            return -1
        total = 0
        for item in value:
            inner = _value_colons(item, depth + 1)
            if inner < 0:
                return -1
            total += inner
        return total
    if type(value) is float:
        return -1 if abs(value) >= _WIDE else 0
    return 0 if value is None or type(value) in (int, bool) else -1


def _load_proof() -> Callable[[bytes, object], bool]:
    module = compiled.load("gateway.wire._colons")
    return _py_proven if module is None else module.proven


_proven: Final = _load_proof()
_CODEC = fastjson.CODEC


def loads_utf8(data: bytes) -> object:
    """``loads(data.decode("utf-8"))``, faster when orjson is installed.

    The same value or the same exception, ``UnicodeDecodeError`` included.
    """
    if _CODEC is not None:
        value = fast_loads(data, _CODEC)
        if value is not UNDECIDED:
            return value
    return loads(data.decode("utf-8"))
