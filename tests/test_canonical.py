"""Canonical JSON against the Reef reference vectors and a JS oracle.

The vectors live outside the repository (``../shared/reef-vectors`` next to
it, or ``$REEF_VECTORS``). They are required: a missing directory is a
collection error, never a skip, so CI cannot go green without them.
"""

from __future__ import annotations

import enum
import json
import math
import random
import struct
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway import canonical, fastjson
from gateway.canonical import (
    CanonicalError,
    canonical_bytes,
    canonical_str,
    digest,
    sha256_hex,
)
from tests.vectors import load_cases

FINITE = "canonical JSON requires finite numbers"
UNSUPPORTED = "unsupported canonical JSON value"


def _cases(name: str) -> list[dict[str, Any]]:
    cases = load_cases(name)
    assert cases, f"{name} has no cases"
    return cases


CANONICAL = _cases("canonical.json")
DIGESTS = _cases("digests.json")


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for c in cases]


def _slow(value: object) -> str:
    return canonical._slow_str(value)


# ---------------------------------------------------------------------------
# canonical.json

OK_JSON = [c for c in CANONICAL if c["expect"] == "ok" and "input_json" in c]
OK_DESCRIBED = [c for c in CANONICAL if c["expect"] == "ok" and "input_json" not in c]
ERRORS = [c for c in CANONICAL if c["expect"] == "error"]

# JS values JSON text cannot carry. Python has no `undefined`; a dropped
# member is a member that is not there.
DESCRIBED_OK: dict[str, object] = {
    "object {a: 1, b: undefined, c: 3} (JS value with an undefined member)": {"a": 1, "c": 3},
    "object {a: undefined}": {},
    "object {o: {x: undefined, y: null}}": {"o": {"y": None}},
}

_nan = float("nan")
_inf = float("inf")
DESCRIBED_ERRORS: dict[str, object] = {
    "number NaN": _nan,
    "number Infinity": _inf,
    "number -Infinity": -_inf,
    "array [1, NaN]": [1, _nan],
    "object {a: {b: [0, NaN]}}": {"a": {"b": [0, _nan]}},
    # Closest Python analogues: values of a type with no JSON meaning.
    "undefined": object(),
    "array [1, undefined]": [1, object()],
    "symbol value": object(),
}


def test_vector_files_cover_every_case_kind() -> None:
    assert len(OK_JSON) + len(OK_DESCRIBED) + len(ERRORS) == len(CANONICAL)
    assert OK_JSON
    assert ERRORS
    # A new described case must be mapped here, not silently ignored.
    assert {c["input_description"] for c in OK_DESCRIBED} <= DESCRIBED_OK.keys()
    assert {c["input_description"] for c in ERRORS} <= DESCRIBED_ERRORS.keys()


@pytest.mark.parametrize("case", OK_JSON, ids=_ids(OK_JSON))
def test_vector_ok(case: dict[str, Any]) -> None:
    value = json.loads(case["input_json"])
    text = canonical_str(value)
    data = canonical_bytes(value)
    assert text == case["canonical"]
    assert data == case["canonical"].encode("utf-8")
    if "canonical_utf8_hex" in case:
        assert data.hex() == case["canonical_utf8_hex"]
    assert sha256_hex(data) == case["sha256"]
    assert digest(value) == case["sha256"]
    assert _slow(value) == case["canonical"]


@pytest.mark.parametrize("case", OK_DESCRIBED, ids=_ids(OK_DESCRIBED))
def test_vector_ok_described(case: dict[str, Any]) -> None:
    value = DESCRIBED_OK[case["input_description"]]
    assert canonical_str(value) == case["canonical"]
    assert digest(value) == case["sha256"]


@pytest.mark.parametrize("case", ERRORS, ids=_ids(ERRORS))
def test_vector_error(case: dict[str, Any]) -> None:
    assert case["error"]["name"] == "TypeError"
    value = DESCRIBED_ERRORS[case["input_description"]]
    for fn in (canonical_str, canonical_bytes, digest):
        with pytest.raises(CanonicalError) as info:
            fn(value)
        assert str(info.value) == case["error"]["message"]
        assert isinstance(info.value, TypeError)


# ---------------------------------------------------------------------------
# digests.json: the formulas the gateway composes from these primitives

APPROVAL = [c for c in DIGESTS if c["kind"] == "approvalDigest"]
POLICY = [c for c in DIGESTS if c["kind"] == "effectiveGuardPolicyVersion"]


def test_digest_vectors_cover_every_kind() -> None:
    assert APPROVAL
    assert POLICY
    assert len(APPROVAL) + len(POLICY) == len(DIGESTS)


@pytest.mark.parametrize("case", APPROVAL, ids=_ids(APPROVAL))
def test_approval_digest(case: dict[str, Any]) -> None:
    proposal = case["proposal"]
    body_hash = digest(proposal["body"])
    assert canonical_str(proposal["body"]) == case["body_canonical"]
    assert body_hash == case["bodyHash"]
    preimage: dict[str, object] = {
        "from": proposal["from"],
        "to": proposal["to"],
        "direction": proposal["direction"],
        "bodyHash": body_hash,
        "policyVersion": proposal["policyVersion"],
    }
    # The reference drops an undefined id; no vector exercises that today.
    if proposal.get("id") is not None:
        preimage["id"] = proposal["id"]
    assert canonical_str(preimage) == case["digest_preimage_canonical"]
    assert digest(preimage) == case["approvalDigest"]


def _effective_policy_version(base: str, outbound: str | None, inbound: str | None) -> str:
    # "Present" means not undefined: an empty-string rule still gets a suffix
    # (digests-029), so this must not test truthiness.
    if outbound is None and inbound is None:
        return base
    return base + "+" + digest({"inbound": inbound or "", "outbound": outbound or ""})


@pytest.mark.parametrize("case", POLICY, ids=_ids(POLICY))
def test_effective_guard_policy_version(case: dict[str, Any]) -> None:
    rules = case["rules"] or {}
    outbound, inbound = rules.get("outbound"), rules.get("inbound")
    assert _effective_policy_version(case["base"], outbound, inbound) == case["effective_full"]
    if case["rules_digest_sha256"] is not None:
        preimage = {"inbound": inbound or "", "outbound": outbound or ""}
        assert digest(preimage) == case["rules_digest_sha256"]
        if "rules_digest_preimage_canonical" in case:
            assert canonical_str(preimage) == case["rules_digest_preimage_canonical"]
    for key, length in case["rules_utf16_lengths"].items():
        assert len(rules[key].encode("utf-16-le")) // 2 == length


# ---------------------------------------------------------------------------
# Cases recorded from Node v20 (the reference's runtime): JSON.stringify of the
# value with keys sorted by Array.prototype.sort, i.e. the reference rules.

NODE_ORACLE: list[tuple[object, str]] = [
    (1e21, "1e+21"),
    (1e-07, "1e-7"),
    (1e-06, "0.000001"),
    (1.23e-18, "1.23e-18"),
    (1e16, "10000000000000000"),
    (1.152921504606847e18, "1152921504606847000"),
    (1152921504606846976, "1152921504606847000"),
    (9007199254740993, "9007199254740992"),
    (-9007199254740993, "-9007199254740992"),
    (1000000000000000000000, "1e+21"),
    (999999999999999999999, "1e+21"),
    (9.999999999999999e20, "999999999999999900000"),
    (1.5, "1.5"),
    (-1.5e300, "-1.5e+300"),
    (0.30000000000000004, "0.30000000000000004"),
    (0.3333333333333333, "0.3333333333333333"),
    (100.0, "100"),
    (4.35, "4.35"),
    (5e-07, "5e-7"),
    (1.234e-06, "0.000001234"),
    (123456789012345678901234567890, "1.2345678901234568e+29"),
    (0.000123, "0.000123"),
    (1e300, "1e+300"),
    (1.5e-323, "1.5e-323"),
    (0.0001, "0.0001"),
    (9.999e-05, "0.00009999"),
    (123.456, "123.456"),
    (1000000000000000.5, "1000000000000000.5"),
    (9999999999999.998, "9999999999999.998"),
    (-0.5, "-0.5"),
    (5e-05, "0.00005"),
    (1234567890123456.8, "1234567890123456.8"),
    ("\ud800", '"\\ud800"'),
    ("\udfff", '"\\udfff"'),
    ("\ud83d\ude00", '"\U0001f600"'),
    ("\ude00\ud83d", '"\\ude00\\ud83d"'),
    ("a\ud800\ud800b", '"a\\ud800\\ud800b"'),
    (
        "".join(chr(i) for i in range(0x20)),
        '"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r'
        "\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018"
        '\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f"',
    ),
    ("\x7f\x80\x9f\xa0", '"\x7f\x80\x9f\xa0"'),
    ("\u2028\u2029", '"\u2028\u2029"'),
    ("\ufeff\ufffe\uffff", '"\ufeff\ufffe\uffff"'),
    ("\U0001f600\U0010ffff", '"\U0001f600\U0010ffff"'),
    ("\ud83d", '"\\ud83d"'),
    ("x\udbff\udfffy", '"x\U0010ffffy"'),
    (
        {"\ue000": 1, "\U0001f600": 2, "\uffff": 3, "\ud7ff": 4, "a": 5, "": 6},
        '{"":6,"a":5,"\ud7ff":4,"\U0001f600":2,"\ue000":1,"\uffff":3}',
    ),
    (
        # chr(): ruff (Rust strings) cannot tell lone-surrogate literals apart.
        {chr(0xDC00): 1, chr(0xD800): 2, "\U00010000": 3, "\ue000": 4, chr(0xD800) * 2: 5},
        '{"\\ud800":2,"\\ud800\\ud800":5,"\U00010000":3,"\\udc00":1,"\ue000":4}',
    ),
    (
        {"b": [1.0, {"y": -0.0, "x": 1e-07}], "a": {"\U0001f30a": "\u2028", "\uff5e": "\x00"}},
        '{"a":{"\U0001f30a":"\u2028","\uff5e":"\\u0000"},"b":[1,{"x":1e-7,"y":0}]}',
    ),
]


@pytest.mark.parametrize(("value", "expected"), NODE_ORACLE)
def test_node_oracle(value: object, expected: str) -> None:
    assert canonical_str(value) == expected
    assert canonical_bytes(value) == expected.encode("utf-8")  # strict: no surrogates left
    assert _slow(value) == expected


# ---------------------------------------------------------------------------
# Rules one by one


def _js_string(s: str) -> str:
    """JSON.stringify for a string without surrogates, from the spec text."""
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
    short["\t"] = "\\t"
    out = []
    for ch in s:
        if ch in short:
            out.append(short[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def test_every_code_point() -> None:
    # Both paths, every scalar value: the C encoder's escaping must equal
    # JSON.stringify's for all of them.
    scalars = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    expected = _js_string(scalars)
    assert canonical._fast_str(scalars) == expected
    assert canonical_str(scalars) == expected
    assert _slow(scalars) == expected
    assert canonical_str({"k": [scalars]}) == '{"k":[' + expected + "]}"


def test_every_lone_surrogate() -> None:
    # "x" between them keeps each one lone.
    lone = "x".join(chr(c) for c in range(0xD800, 0xE000))
    expected = '"' + "x".join(f"\\u{c:04x}" for c in range(0xD800, 0xE000)) + '"'
    assert canonical_str(lone) == expected
    assert canonical_bytes(lone) == expected.encode("ascii")
    assert canonical_str({lone: lone}) == "{" + expected + ":" + expected + "}"


def test_surrogate_pair_code_points_are_the_astral_character() -> None:
    # In UTF-16 (the reference's view) they are the same string.
    pair = "\ud83d\ude00"
    assert canonical_bytes(pair) == canonical_bytes("\U0001f600") == b'"\xf0\x9f\x98\x80"'
    assert canonical_str({pair: pair}) == '{"\U0001f600":"\U0001f600"}'


def test_keys_equal_in_utf16_are_rejected() -> None:
    # A JS object cannot hold both; picking one would hide data.
    with pytest.raises(CanonicalError, match=UNSUPPORTED):
        canonical_bytes({"\U0001f600": 1, "\ud83d\ude00": 2})


def test_utf16_key_order_differs_from_code_point_order() -> None:
    value = {"\uff01": 1, "\U0001f600": 2}
    assert sorted(value) == ["\uff01", "\U0001f600"]  # Python's order
    assert canonical_str(value) == '{"\U0001f600":2,"\uff01":1}'
    assert canonical._fast_str(value) is None  # the C encoder would get it wrong


def test_key_order_is_by_code_unit_not_locale() -> None:
    value = {"b": 1, "a": 2, "B": 3, "_": 4, "é": 5, "aa": 6, "": 7, "a\x00": 8}
    expected = '{"":7,"B":3,"_":4,"a":2,"a\\u0000":8,"aa":6,"b":1,"é":5}'
    assert canonical_str(value) == expected
    assert _slow(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0"),
        (-0.0, "0"),
        (0.0, "0"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (2**53, "9007199254740992"),
        (-(2**53), "-9007199254740992"),
        (2**53 + 2, "9007199254740994"),
        (2**53 + 3, "9007199254740996"),  # ties to even, as JSON.parse
        (10**20, "100000000000000000000"),
        (123.0, "123"),
        ((), "[]"),
        ([], "[]"),
        ({}, "{}"),
        ((1, "a", None), '[1,"a",null]'),
        ([[[]]], "[[[]]]"),
        ({"a": True, "b": [False, 0]}, '{"a":true,"b":[false,0]}'),
    ],
)
def test_scalars_and_containers(value: object, expected: str) -> None:
    assert canonical_str(value) == expected
    assert _slow(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        10**400,  # beyond the double range: Infinity in the reference
        -(10**400),
        [1, {"a": 10**309}],
    ],
)
def test_non_finite_numbers(value: object) -> None:
    with pytest.raises(CanonicalError, match=FINITE):
        canonical_bytes(value)


class _Color(enum.Enum):
    RED = 1


@pytest.mark.parametrize(
    "value",
    [
        b"bytes",
        bytearray(b"x"),
        {1, 2},
        frozenset(),
        1j,
        Decimal("1.5"),
        _Color.RED,
        object(),
        len,
        {1: "int key"},
        {None: "None key"},
        {True: "bool key"},
        {("a",): "tuple key"},
        {"ok": {2.5: "float key"}},
        [b"nested"],
    ],
)
def test_unsupported_values(value: object) -> None:
    with pytest.raises(CanonicalError, match=UNSUPPORTED):
        canonical_bytes(value)
    with pytest.raises(CanonicalError, match=UNSUPPORTED):
        canonical_str(value)


def test_cycles_are_unsupported_not_a_crash() -> None:
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(CanonicalError, match=UNSUPPORTED):
        canonical_bytes(looped)
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    with pytest.raises(CanonicalError, match=UNSUPPORTED):
        canonical_str(cyclic)


class _IntFlag(enum.IntEnum):
    ONE = 1


class _Str(enum.StrEnum):
    A = "a\n"


class _Dict(dict[str, object]):
    pass


def test_subclasses_and_mappings_use_their_values() -> None:
    assert canonical_str(_IntFlag.ONE) == "1"
    assert canonical_str(_Str.A) == '"a\\n"'
    assert canonical_str(_Dict(b=1, a=2)) == '{"a":2,"b":1}'
    assert canonical_str(MappingProxyType({"b": 1, "a": (2,)})) == '{"a":[2],"b":1}'
    assert canonical_str({_Str.A: 1}) == '{"a\\n":1}'


def test_fast_path_is_taken_for_typical_values() -> None:
    # Guards against a silent performance regression to the slow path.
    typical: list[object] = [
        {"direction": "outbound", "text": "x" * 2048, "policyVersion": "reef-v1", "model": "x"},
        {"seq": 1, "ts": 1784131200123, "type": "request", "payload": {"latency_ms": 12.345}},
        {"findings": [{"kind": "aws", "fingerprint": "00ff"}], "n": None, "ok": True},
        "plain string with \u00e9 and \U0001f600",
    ]
    for value in typical:
        assert canonical._fast_str(value) is not None, value
    # And the cases it must hand over.
    for value in [1.0, 1e16, 1e-5, 2**53 + 1, {"\ue000": 1}, {1: 2}, _Dict(), (1.0,)]:
        assert canonical._fast_str(value) is None, value


# ---------------------------------------------------------------------------
# Randomised: fast path == slow path, and numbers == an independent oracle

_ALPHABET = [
    "a",
    "Z",
    "0",
    " ",
    '"',
    "\\",
    "/",
    "\n",
    "\t",
    "\x00",
    "\x1f",
    "\x7f",
    "\x85",
    "\u2028",
    "\u2029",
    "\u00e9",
    "\u4e2d",
    "\ud7ff",
    "\ue000",
    "\ufeff",
    "\uffff",
    "\U00010000",
    "\U0001f600",
    "\U0010ffff",
    "\ud800",
    "\udbff",
    "\udc00",
    "\udfff",
    "\ud83d",
    "\ude00",
]


def _random_float(rnd: random.Random) -> float:
    pick = rnd.random()
    if pick < 0.3:
        while True:
            f: float = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
            if math.isfinite(f):
                return f
    if pick < 0.6:
        return rnd.randint(1, 10 ** rnd.randint(1, 17)) * 10.0 ** rnd.randint(-25, 25)
    if pick < 0.8:
        return round(rnd.uniform(-1000, 1000), rnd.randint(0, 6))
    return rnd.choice([0.0, -0.0, 1e21, 1e-7, 1e-6, 1e-4, 1e16, 2.0**53, 5e-324, 1.5e308])


def _random_value(rnd: random.Random, depth: int = 0) -> object:
    pick = rnd.random()
    if depth > 3 or pick < 0.35:
        return "".join(rnd.choice(_ALPHABET) for _ in range(rnd.randint(0, 8)))
    if pick < 0.45:
        return _random_float(rnd)
    if pick < 0.55:
        return rnd.choice([-1, 1]) * rnd.randint(0, 10 ** rnd.randint(1, 25))
    if pick < 0.6:
        return rnd.choice([None, True, False])
    if pick < 0.75:
        items = [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
        return items if rnd.random() < 0.8 else tuple(items)
    keys = ["".join(rnd.choice(_ALPHABET) for _ in range(rnd.randint(0, 4))) for _ in range(5)]
    return {k: _random_value(rnd, depth + 1) for k in keys[: rnd.randint(0, 5)]}


def _random_plain(rnd: random.Random, depth: int = 0) -> object:
    """Values shaped like gateway records, which the fast path should take."""
    pick = rnd.random()
    if depth > 3 or pick < 0.4:
        return "".join(rnd.choice(_ALPHABET[:17]) for _ in range(rnd.randint(0, 40)))
    if pick < 0.5:
        return rnd.randint(-(2**53), 2**53)
    if pick < 0.6:
        return round(rnd.uniform(0.001, 1e6), 3)
    if pick < 0.65:
        return rnd.choice([None, True, False])
    if pick < 0.75:
        return [_random_plain(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {
        "".join(rnd.choice("abcXYZ_-09") for _ in range(rnd.randint(0, 6))): _random_plain(
            rnd, depth + 1
        )
        for _ in range(rnd.randint(0, 6))
    }


def _values(seed: int, n: int, gen: Callable[[random.Random], object]) -> Iterator[object]:
    rnd = random.Random(seed)
    for _ in range(n):
        yield gen(rnd)


def _canonical_or_error(fn: Callable[[object], object], value: object) -> object:
    try:
        return fn(value)
    except CanonicalError as exc:
        return ("error", str(exc))


def test_random_fast_equals_slow() -> None:
    taken = 0
    for gen in (_random_value, _random_plain):
        for value in _values(20240611, 4000, gen):
            slow = _canonical_or_error(lambda v: _slow(v).encode("utf-8"), value)
            assert _canonical_or_error(canonical_bytes, value) == slow, ascii(value)
            slow_str = _canonical_or_error(_slow, value)
            assert _canonical_or_error(canonical_str, value) == slow_str, ascii(value)
            fast = canonical._fast_str(value)
            if fast is not None and not canonical._has_surrogate(fast):
                taken += 1
                assert fast == slow_str
    assert taken > 3000  # the plain generator must mostly exercise the fast path


def _js_number_oracle(value: float) -> str:
    """Number::toString from the spec, using Decimal for the digits."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = k + exponent
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return sign + mantissa + f"e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"


def test_random_numbers_match_oracle() -> None:
    rnd = random.Random(7)
    for _ in range(20000):
        f = _random_float(rnd)
        assert canonical_str(f) == _js_number_oracle(f), repr(f)
        i = rnd.choice([-1, 1]) * rnd.randint(0, 10 ** rnd.randint(1, 30))
        assert canonical_str(i) == _js_number_oracle(float(i)), i


def test_sha256_hex() -> None:
    assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert digest({"b": 1, "a": [None]}) == sha256_hex(b'{"a":[null],"b":1}')


def test_mapping_values_are_not_mutated() -> None:
    value: Mapping[str, object] = {"b": [3, 1], "a": {"z": 1, "y": 2}}
    before = repr(value)
    canonical_bytes(value)
    canonical._slow_str(value)
    assert repr(value) == before


# ---------------------------------------------------------------------------
# orjson (gateway.fastjson) against the C encoder and the rules themselves

_ORJSON = fastjson.orjson_codec()
needs_orjson = pytest.mark.skipif(_ORJSON is None, reason="orjson is not installed")

_texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_plain_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=1e-4, max_value=1e16, exclude_max=True)
    | st.integers()
    | _texts
)
_values_st = st.recursive(
    _plain_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(_texts, children, max_size=4)
    ),
    max_leaves=24,
)


def _bytes_with(codec: fastjson.Codec | None, value: object) -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(canonical, "_CODEC", codec)
        return _canonical_or_error(canonical_bytes, value)


@needs_orjson
@settings(max_examples=600, deadline=None)
@given(_values_st)
def test_orjson_bytes_equal_the_encoders(value: object) -> None:
    # Floats, ints past 2**53, unicode past U+E000, surrogates and control
    # characters included: what _plain lets through orjson writes as the C
    # encoder does; the rest falls back, with the same bytes or error.
    slow = _canonical_or_error(lambda v: _slow(v).encode("utf-8"), value)
    assert _bytes_with(_ORJSON, value) == slow
    assert _bytes_with(None, value) == slow


@needs_orjson
def test_orjson_bytes_equal_the_encoders_seeded() -> None:
    taken = 0
    for gen in (_random_value, _random_plain):
        for value in _values(15, 4000, gen):
            slow = _canonical_or_error(lambda v: _slow(v).encode("utf-8"), value)
            assert _bytes_with(_ORJSON, value) == slow, ascii(value)
            if canonical._plain(value):
                assert _ORJSON is not None
                try:
                    assert _ORJSON.dumps_sorted(value) == slow
                    taken += 1
                except TypeError:
                    # Refused for a lone surrogate, as the strict UTF-8 encoding refuses it.
                    assert canonical._has_surrogate(canonical._C_ENCODER.encode(value))
    assert taken > 3000


@needs_orjson
@pytest.mark.parametrize(
    "value",
    [
        {"a": "\ud800"},
        ["x", "\udfff"],
        {"\ud83d\ude00": 1},
        {"z": 1, "\x00": 2, "é": 3, "\u2028": 4},
        [[[]]] * 3,
        {"deep": json.loads("[" * 400 + "]" * 400)},
        {"n": 2**53, "m": -(2**53), "f": 0.0001, "g": 9999999999999998.5, "t": True},
        {"x": 1.0},
        {"x": 2**64},
        # Every code point but the surrogates, as values and as keys.
        ["".join(map(chr, range(0xD800))), "".join(map(chr, range(0xE000, 0x110000)))],
        {chr(c): c for c in range(0, 0xD800, 7)},
        {1: "non-str key"},
        _Dict(b=1, a=2),
    ],
)
def test_orjson_bytes_known_cases(value: object) -> None:
    slow = _canonical_or_error(lambda v: _slow(v).encode("utf-8"), value)
    assert _bytes_with(_ORJSON, value) == slow
