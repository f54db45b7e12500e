"""The fast JSON reader's proof in C (`_colons.proven`) answers what its Python
twin (`jsontext._py_proven`) answers, and both count what counting the ':' of
orjson.dumps(value) counted.

The proof decides whether orjson's value is taken for a body; a wrong True
would let a duplicate key or an integer read as a float through.
tests/wire/test_json_differential.py holds the whole reader to the stdlib's.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway import fastjson
from gateway.wire import jsontext
from gateway.wire._colons import proven

CODEC = fastjson.orjson_codec()

# Bytes around the ones that matter: ':', and the escape "\u003" and its near misses.
PIECES = [
    b":",
    b"\\",
    b"u",
    b"0",
    b"3",
    b"a",
    b"\\u003",
    b"\\u003a",
    b"\\u00",
    b'"',
    b" ",
    b"\xc3\xa9",
]
bodies = st.lists(st.sampled_from(PIECES), max_size=24).map(b"".join)

# Strings of every width CPython stores (1, 2 and 4 bytes a character), with ':'.
texts = st.text(st.sampled_from(["a", ":", "é", "€", ":", "😀", "\x00"]), max_size=12)
WIDE = 2.0**63
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [WIDE, -WIDE, WIDE * 2, 1.8446744073709552e19, 9.223372036854775e18, -9.223372036854775e18]
)
# The values orjson.loads returns: its integers are those of 64 bits, signed or not.
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | floats | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=24,
)


@settings(max_examples=3000, deadline=None)
@given(bodies, values)
def test_c_and_python_agree(body: bytes, value: object) -> None:
    assert proven(body, value) is jsontext._py_proven(body, value)


def _has_wide_float(value: object) -> bool:
    if isinstance(value, float):
        return abs(value) >= WIDE
    if isinstance(value, dict):
        return any(_has_wide_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_wide_float(v) for v in value)
    return False


@pytest.mark.skipif(CODEC is None, reason="orjson is not installed")
@settings(max_examples=2000, deadline=None)
@given(values, st.integers(-3, 3), bodies)
def test_the_count_is_that_of_the_value_written_back(
    value: object, shift: int, noise: bytes
) -> None:
    # The body's ':' count around the written value's, and escapes from the noise.
    assert CODEC is not None
    written = CODEC.dumps(value)
    body = written + noise if shift == 0 else written + b":" * shift if shift > 0 else noise
    expected = (
        b"\\u003" not in body
        and body.count(b":") == written.count(b":")
        and not _has_wide_float(value)
    )
    assert proven(body, value) is expected
    assert jsontext._py_proven(body, value) is expected


@pytest.mark.skipif(CODEC is None, reason="orjson is not installed")
@pytest.mark.parametrize("kinds", ["l", "d", "ld", "dll"])
@pytest.mark.parametrize("depth", [1, 100, 253, 254, 255, 256, 300])
def test_nesting_is_taken_as_far_as_orjson_writes_it(kinds: str, depth: int) -> None:
    assert CODEC is not None
    value: object = 1
    for level in range(depth):
        value = [value] if kinds[level % len(kinds)] == "l" else {"k": value}
    try:
        body = CODEC.dumps(value)
    except TypeError:
        writes = False
        body = b"[" * depth + b"]" * depth
    else:
        writes = True
    assert proven(body, value) is writes
    assert jsontext._py_proven(body, value) is writes


@pytest.mark.parametrize(
    ("body", "value", "answer"),
    [
        (b'{"a":1}', {"a": 1}, True),
        (b'{"a": 1, "a": 2}', {"a": 2}, False),
        (b'{"a":"x:y"}', {"a": "x:y"}, True),
        (b'{"a:b":"x"}', {"a:b": "x"}, True),
        (b'{"a":"x\\u003ay"}', {"a": "x:y"}, False),
        (b'{"a":"x\\u003"}', {"a": "x"}, False),
        (b"[18446744073709551616]", [1.8446744073709552e19], False),
        (b"[-9223372036854775809]", [-WIDE], False),
        (b"[18446744073709551615]", [18446744073709551615], True),
        (b"[9.223372036854775e18]", [9.223372036854775e18], True),
        (b"[1e300]", [1e300], False),
        (b'{"a":[1,2,{"b:":null}]}', {"a": [1, 2, {"b:": None}]}, True),
        (b"", None, True),
        (b"\\u00", None, True),
    ],
)
def test_each_case(body: bytes, value: object, answer: bool) -> None:
    assert jsontext._py_proven(body, value) is answer
    assert proven(body, value) is answer


class Text(str):
    pass


# Each body holds the ':' the value would count were its types JSON's.
@pytest.mark.parametrize(
    ("body", "value"),
    [(b"", (1,)), (b":", {1: "a"}), (b":", {"a": (1,)}), (b"", Text("a")), (b":", {Text("a"): 1})],
)
def test_what_orjson_never_returns_is_not_proven(body: bytes, value: object) -> None:
    assert proven(body, value) is False
    assert jsontext._py_proven(body, value) is False


def test_the_body_must_be_bytes() -> None:
    with pytest.raises(TypeError):
        proven(b":")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        proven(":", {})  # type: ignore[arg-type]
