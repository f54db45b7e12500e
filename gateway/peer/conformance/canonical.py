"""canonical.json, through `gateway.canonical`."""

from __future__ import annotations

import json

from gateway.canonical import CanonicalError, canonical_bytes, canonical_str, digest
from gateway.peer.conformance.harness import Case, Mismatch, Relaxed, equal, unknown

_NAN = float("nan")
_INF = float("inf")

# JavaScript values that JSON text cannot carry, by the vector's description.
# Python has no `undefined`: a dropped member is a member that is not there,
# and a value of a type with no JSON meaning stands for undefined and symbols.
DESCRIBED: dict[str, object] = {
    "object {a: 1, b: undefined, c: 3} (JS value with an undefined member)": {"a": 1, "c": 3},
    "object {a: undefined}": {},
    "object {o: {x: undefined, y: null}}": {"o": {"y": None}},
    "number NaN": _NAN,
    "number Infinity": _INF,
    "number -Infinity": -_INF,
    "array [1, NaN]": [1, _NAN],
    "object {a: {b: [0, NaN]}}": {"a": {"b": [0, _NAN]}},
    "undefined": object(),
    "array [1, undefined]": [1, object()],
    "symbol value": object(),
}


def _value(case: Case) -> object:
    if "input_json" in case:
        return json.loads(case["input_json"])
    description = case.get("input_description")
    if description not in DESCRIBED:
        raise Mismatch(f"no Python value for {description!r}")
    return DESCRIBED[str(description)]


def check(case: Case) -> Relaxed | None:
    expect = case.get("expect")
    value = _value(case)
    if expect == "ok":
        equal("canonical", canonical_str(value), case["canonical"])
        data = canonical_bytes(value)
        if "canonical_utf8_hex" in case:
            equal("UTF-8 bytes", data.hex(), case["canonical_utf8_hex"])
        equal("sha256", digest(value), case["sha256"])
    elif expect == "error":
        try:
            canonical_bytes(value)
        except CanonicalError as exc:
            equal("error", str(exc), case["error"]["message"])
        else:
            raise Mismatch("encoded a value the reference refused")
    else:
        raise unknown(case)
    return None
