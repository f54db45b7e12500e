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
