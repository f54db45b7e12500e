"""The injection detector's one-pass unescaping (`text._unescape`) gives what
the escapes replaced one after another give, text for text.

The reference below is the definition: each of `_STRING_ESCAPES` replaced in
turn, then every `\\uXXXX` of four hex digits that is not a lone surrogate
half. A difference would change what the rules read in a tool result, so the
two are compared on short texts built from the characters that make escapes
(backslashes in runs, the escaped letters, hex digits, surrogate codes), on
the differential texts, and on those texts as JSON strings, which is how tool
results arrive.
"""

from __future__ import annotations

import json
import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.guard.detectors.injection import text
from tests.guard.texts import differential_texts

_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unicode_escape(m: re.Match[str]) -> str:
    code = int(m.group(1), 16)
    return m.group() if 0xD800 <= code <= 0xDFFF else chr(code)


def reference(value: str) -> str:
    for escaped, char in text._STRING_ESCAPES:
        value = value.replace(escaped, char)
    return _U_ESCAPE.sub(_unicode_escape, value)


# What escapes are made of, and what sits next to them.
_PIECES = ["\\", "\\\\", "n", "r", "t", '"', "/", "u", "0", "5", "c", "d8", "D", "F", "x", " "]
_PIECES += ["é", "\ud800", "\U0001f600", "00", "005c", "0041", "d800", "DFFF", "\\u"]


def test_definition_examples() -> None:
    assert text._unescape('a\\nb\\tc\\"d\\/e\\rf') == 'a\nb c"d/e\nf'
    assert text._unescape("\\u0041\\u00e9") == "Aé"
    # A lone surrogate half stays an escape; so does a short or non-hex one.
    assert text._unescape("\\ud800 \\u12 \\u12g4") == "\\ud800 \\u12 \\u12g4"
    # An escaped backslash before a letter: the pair is the second backslash's.
    assert text._unescape("\\\\n") == "\\\n"
    # What \u005c yields is not read again.
    assert text._unescape("\\u005cn") == "\\n"
    assert text._unescape("trailing \\") == "trailing \\"


def test_seeded_pieces() -> None:
    rng = random.Random(15)
    for _ in range(100_000):
        value = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 12)))
        assert text._unescape(value) == reference(value), value


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join))
def test_hypothesis_pieces(value: str) -> None:
    assert text._unescape(value) == reference(value)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=64))
def test_hypothesis_any_text(value: str) -> None:
    assert text._unescape(value) == reference(value)


def test_differential_texts_and_their_json() -> None:
    for value in differential_texts("unescape", generated=500):
        assert text._unescape(value) == reference(value)
        wrapped = json.dumps({"stdout": value, "code": 0})
        assert text._unescape(wrapped) == reference(wrapped)
        ascii_wrapped = json.dumps(value, ensure_ascii=True)
        assert text._unescape(ascii_wrapped) == reference(ascii_wrapped)
