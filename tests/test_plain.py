"""The canonical encoder's plain-value check in C (`_plain.plain`) answers what its
Python twin (`canonical._py_plain`) answers, for any value.

A wrong True would let the fast encoders write a value whose canonical JSON
differs (a float's digits, a key's UTF-16 order), and every audit entry,
review binding and Reef envelope is hashed over those bytes.
"""

from __future__ import annotations

import enum
import random
import sys
from collections import OrderedDict

import pytest

from gateway import _plain, canonical
from tests.test_canonical import _random_plain, _random_value


class _Int(enum.IntEnum):
    ONE = 1


class _Str(str):
    pass


class _List(list[object]):
    pass


def _outcome(check: object, value: object) -> object:
    try:
        return check(value)  # type: ignore[operator]
    except RecursionError:
        return "RecursionError"


def assert_same(value: object) -> None:
    assert _outcome(_plain.plain, value) == _outcome(canonical._py_plain, value), repr(value)[:300]


EDGES: list[object] = [
    None,
    True,
    False,
    "",
    "text",
    2**53,
    -(2**53),
    2**53 + 1,
    -(2**53) - 1,
    2**63,
    -(2**64),
    10**400,
    0,
    0.5,
    1e-4,
    -1e-4,
    9.9999e-5,
    1e16,
    9999999999999998.0,
    1e16 - 2,
    -1e16,
    123.0,
    -0.0,
    0.0,
    float("nan"),
    float("inf"),
    -float("inf"),
    1.5,
    _Int.ONE,
    _Str("a"),
    _List([1]),
    OrderedDict(a=1),
    {"a"},
    frozenset(),
    b"bytes",
    bytearray(b"x"),
    object(),
    1j,
]
KEYS: list[object] = [
    "",
    "a",
    "é",
    "\u4e2d",
    "\udfff",
    "\ue000",
    "\uffff",
    "\U0001f600",
    "a\ue000",
    _Str("k"),
    1,
    None,
    (1,),
]


def test_edges_alone_and_inside_containers() -> None:
    for value in EDGES:
        assert_same(value)
        assert_same([value])
        assert_same((value, "x"))
        assert_same({"k": value})
        assert_same({"k": [value]})
        assert_same([{"k": value}])
    for key in KEYS:
        assert_same({key: 1})  # type: ignore[dict-item]
        assert_same({"a": {key: "x"}})  # type: ignore[dict-item]
        assert_same([{"b": 1, key: 2}])  # type: ignore[dict-item]


def test_random_values() -> None:
    rnd = random.Random(15)
    for _ in range(3000):
        assert_same(_random_value(rnd))
        assert_same(_random_plain(rnd))


def test_mixed_random_values() -> None:
    rnd = random.Random(16)
    pool = EDGES + [{k: 1} for k in KEYS]  # type: ignore[misc]

    def value(depth: int) -> object:
        roll = rnd.random()
        if depth > 4 or roll < 0.4:
            return rnd.choice(pool)
        if roll < 0.6:
            return [value(depth + 1) for _ in range(rnd.randint(0, 4))]
        if roll < 0.7:
            return tuple(value(depth + 1) for _ in range(rnd.randint(0, 3)))
        return {rnd.choice(["a", "b", "é", "\ue000"]): value(depth + 1) for _ in range(3)}

    for _ in range(5000):
        assert_same(value(0))


@pytest.mark.parametrize("depth", [10, 200, 900])
def test_nesting(depth: int) -> None:
    nested: object = "leaf"
    for i in range(depth):
        nested = [nested] if i % 2 else {"k": nested}
    assert _plain.plain(nested) is True
    assert canonical._py_plain(nested) is True


def test_past_the_recursion_limit_both_refuse() -> None:
    nested: object = 1
    for _ in range(sys.getrecursionlimit() * 2):
        nested = [nested]
    assert _outcome(_plain.plain, nested) == "RecursionError"
    assert _outcome(canonical._py_plain, nested) == "RecursionError"
    # And canonical_bytes says so in its own words.
    with pytest.raises(canonical.CanonicalError):
        canonical.canonical_bytes(nested)
