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
# and numbers that overflow a double, lone surrogate escapes, and nesting
# orjson.dumps will not write back (past 254 levels), which also keeps the
# fast path far from Python's recursion limit. What it accepts is proven by
#
# 1. Writing it back: when orjson.dumps gives the body byte for byte, as it
#    does for the compact UTF-8 JSON that httpx, the OpenAI and Anthropic SDKs
#    and JSON.stringify send, the text holds nothing but what the value holds:
#    no key lost to a duplicate, no integer turned float (orjson writes a
#    float with "." or "e", which an integer token lacks). Every number is the
#    shortest text that reads back as itself, so Python's correctly rounded
#    float() reads the same double.
#
# 2. Otherwise, counting ':' bytes. In JSON text a ':' byte is either an
#    object member's separator or a character of a string (UTF-8 never uses
#    0x3A inside a multi-byte character; no number or literal has one). A
#    string's ':' characters are its ':' bytes, except those spelled \u003a,
#    which the body is checked not to have. orjson.dumps writes one ':' per
#    member and a string's ':' characters as they are, so it writes as many
#    as the body holds unless members were lost, and each member lost to a
#    later duplicate takes its separator (and maybe more) with it: equal
#    counts mean no key repeats. Then numbers: an integer of 19 digits or
#    more may be past 64 bits, so a body with a run of 19 digits anywhere (in
#    a string too, which costs only the slow path) goes to loads(); such an
#    integer is at least 2**63, which orjson writes back with "e+", so only a
#    value written with a "+" needs its body's digits counted.


class _Undecided:
    __slots__ = ()


UNDECIDED: Final = _Undecided()

# The escape of ':' in either case, and a few neighbours (the escapes of
# digits and ;<=>?, which no serialiser needs): those bodies go to loads().
_COLON_ESCAPES = b"\\u003"
_DIGITS = bytes(ord("0") if 0x30 <= c <= 0x39 else ord(" ") for c in range(256))
_LONG_NUMBER = b"0" * 19


def fast_loads(data: bytes, codec: fastjson.Codec) -> object:
    """What ``loads(data.decode())`` returns, when orjson proves it; else UNDECIDED."""
    try:
        value = codec.loads(data)
        written = codec.dumps(value)
    except (ValueError, TypeError):
        return UNDECIDED
    if written == data:
        return value
    if not _same_colons(data, written):
        return UNDECIDED
    # orjson writes every float of 1e16 or more with "e+", so a value without a
    # "+" anywhere holds no integer it read as a float: no digits to count.
    if b"+" in written and _LONG_NUMBER in data.translate(_DIGITS):
        return UNDECIDED
    return value


def _py_same_colons(data: bytes, written: bytes) -> bool:
    """No escape of ':' in the body, and as many ':' bytes as orjson wrote.

    `_colons.same_colons` in C; bytes.count reads about five instructions a byte.
    """
    return _COLON_ESCAPES not in data and data.count(b":") == written.count(b":")


def _colon_proof() -> Callable[[bytes, bytes], bool]:
    module = compiled.load("gateway.wire._colons")
    return _py_same_colons if module is None else module.same_colons


_same_colons: Final = _colon_proof()
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
