"""The fast JSON reader's ':' proof in C (`_colons.same_colons`) answers what its
Python twin (`jsontext._py_same_colons`) answers, for any two byte strings.

The proof decides whether orjson's value is taken for a body that orjson does
not write back byte for byte; a wrong True would let a duplicate key through.
tests/wire/test_json_differential.py holds the whole reader to the stdlib's.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.wire import jsontext
from gateway.wire._colons import same_colons

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


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=24).map(b"".join),
    st.lists(st.sampled_from(PIECES), max_size=24).map(b"".join),
)
def test_generated_pairs(body: bytes, written: bytes) -> None:
    assert same_colons(body, written) is jsontext._py_same_colons(body, written)


@pytest.mark.parametrize(
    ("body", "written", "same"),
    [
        (b'{"a": 1}', b'{"a":1}', True),
        (b'{"a": 1, "a": 2}', b'{"a":2}', False),
        (b'{"a": "x:y"}', b'{"a":"x:y"}', True),
        (b'{"a": "x\\u003ay"}', b'{"a":"x:y"}', False),
        (b'{"a": "x\\u003"}', b'{"a":"x"}', False),
        (b"\\u003", b"", False),
        (b"\\u00", b"", True),
        (b"", b"", True),
    ],
)
def test_each_case(body: bytes, written: bytes, same: bool) -> None:
    assert jsontext._py_same_colons(body, written) is same
    assert same_colons(body, written) is same


def test_only_two_bytes_arguments_are_taken() -> None:
    with pytest.raises(TypeError):
        same_colons(b":")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        same_colons(":", b":")  # type: ignore[arg-type]
