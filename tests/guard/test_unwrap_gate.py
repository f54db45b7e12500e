"""unwrap's gate in C (`_unwrap_gate.clean`) answers what `unwrap._clean` answers.

`unwrap.find` returns a text's findings without walking it when the gate
says the text is clean; a gate that said so wrongly would let a wrapped
secret through. So the compiled gate is held to its Python twin text for
text: on each escape form and its near misses, on each way a run is turned
away or decoded, on generated texts built from those pieces, on texts built
to reach the test of a CamelCase name's next line, and on every corpus text
and the bench's agent turns. The end-to-end verdicts are held to a frozen
reference by test_floor_differential.py, with and without the extension.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.guard.detectors import unwrap
from gateway.guard.detectors._unwrap_gate import clean
from tests.guard.texts import differential_texts


def python(text: str) -> bool:
    return unwrap._clean(text)


def disagreements(texts: list[str]) -> list[tuple[str, bool, bool]]:
    return [(t, clean(t), python(t)) for t in texts if clean(t) != python(t)]


# Each escape form of unwrap._has_escapes, with near misses that are not one.
ESCAPES = [
    ("%41", True),
    ("%4g", False),
    ("%4", False),
    ("&#1", True),
    ("&#", False),
    ("&#x", False),
    ("&#xA", True),
    ("&#XZ", False),
    ("&amp;", True),
    ("&a;", False),
    ("&a1;", True),
    ("&" + "a" * 32 + ";", True),
    ("&" + "a" * 33 + ";", False),
    ("& amp;", False),
    ("\\x4", False),
    ("\\x41", True),
    ("\\u12g4", False),
    ("\\u1234", True),
    ("\\u{}", False),
    ("\\u{1}", True),
    ("\\u{123456}", True),
    ("\\u{1234567}", False),
    ("\\u{12", False),
    ("\\U0001F60", False),
    ("\\U0001F600", True),
    ("\\", False),
    (", ".join(["0x01"] * 8), True),
    (", ".join(["0x01"] * 7), False),
    (" ".join(["0x0a"] * 8), True),
    ("    ".join(["0x0a"] * 8), True),
    ("     ".join(["0x0a"] * 8), False),
    ("  ;  ".join(["0x0a"] * 8), True),
    ("   ;".join(["0x0a"] * 8), False),
    (";   ".join(["0x0a"] * 8), False),
    (",,".join(["0x0a"] * 8), False),
    (",".join(["0X0a"] * 8), False),
    (",".join(["0x0g"] * 8), False),
    ("0x0a0b" + ",0x0a" * 7, False),
    ("x 0x" + ",0x0a" * 8, True),
]


@pytest.mark.parametrize(("text", "escape"), ESCAPES)
def test_each_escape_form_and_its_near_misses(text: str, escape: bool) -> None:
    for framed in (text, f"see {text} here", f"{text}\n", f"a{text}"):
        assert unwrap._has_escapes(framed) is escape
        assert clean(framed) is python(framed) is not escape


CAMEL = "ConnectionResetErrorHandler"
HEX_TEXT = b"hello world, hi".hex()  # hex that spells ASCII text: decoded
B64_LINE = "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ"

# Runs that are turned away, and runs the walk would decode.
RUNS = [
    ("id 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 ok", True),
    (f"data {HEX_TEXT} end", False),
    (f"data 0x{HEX_TEXT} end", False),
    (f"data 0x{HEX_TEXT}a end", True),
    ("der 3082010a0282010100c0ffee00 end", False),
    ("word abcdefghijklmnopqrstu end", True),
    ("WORD ABCDEFGHIJKLMNOPQRSTU END", True),
    ("path_to-some_long-identifier_name", True),
    (f"x {B64_LINE} y", False),
    (f"x -{B64_LINE} y", False),
    (f"{CAMEL} at the start", False),
    (f"x {CAMEL} alone", True),
    (f"x {CAMEL}= padded", False),
    (f"x {CAMEL}\n{B64_LINE}\n", False),
    (f"x {CAMEL}\nabc\n", True),
    (f"x {CAMEL}\nabcd\n", False),
    (f'x "{CAMEL}" +\n  "{B64_LINE}"', False),
    (f"x {CAMEL}\\n{B64_LINE}", False),
    (f"x {CAMEL}\r\n# {B64_LINE}\r\n", False),
    (f"x {CAMEL}\n// {B64_LINE}==", False),
    (f"x {CAMEL}\n//abcdefghij more", True),
    (f"x {CAMEL}\nabcdefghij more", True),
    (f"x {CAMEL}\nabcdefghij,\n", False),
    ("x AbcdefghijklmnoP y", False),
    ("x aBcdefghijklmnop y", True),
    ("x ABcdefghijklmnop y", False),
    ("x abcdefghijklmno1 y", True),
    ("x Abcdefghijklmno1 y", False),
    ("x 1234567890123456 y", True),
    ("x 12345678901234567 y", True),
    ("x ++++++++++++++++ y", False),
]


@pytest.mark.parametrize(("text", "quiet"), RUNS)
def test_each_way_a_run_is_turned_away_or_decoded(text: str, quiet: bool) -> None:
    assert python(text) is quiet
    assert clean(text) is quiet


def test_text_that_is_not_ascii_is_left_to_the_walk() -> None:
    assert clean("plain words") is True
    assert clean("plain wörds") is False
    assert clean("") is True
    with pytest.raises(TypeError):
        clean(b"bytes")  # type: ignore[arg-type]

    class Text(str):
        pass

    assert clean(Text("plain words")) is True


PIECES = [
    CAMEL,
    "HelloWorldFooBarBaz",
    "abcdefghijklmnopq",
    "ABCDEFGHIJKLMNOPQR",
    B64_LINE,
    "aGVsbG8gd29ybGQgaGVsbG8=",
    HEX_TEXT,
    "3082010a02820101",
    "0x48656c6c6f20776f",
    "0X48656c6c6f20776f7",
    "deadbeefdeadbeefdeadbeef",
    *"-_=+ \t\"',\n\r#;>*/",
    "==",
    "\\r",
    "\\n",
    "\r\n",
    "//",
    "--",
    "  ",
    "%41",
    "&#1",
    "&amp;",
    "\\x41",
    "\\u{1}",
    "0x01, ",
    "abcd",
    "Ab",
    "xyz+/abc",
]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16).map("".join))
def test_generated_texts(text: str) -> None:
    assert clean(text) is python(text)


_BETWEEN = [" ", "\t", '"', "'", "\\r", "\\n", "\n", "\r\n"]


def _gap(rng: random.Random) -> str:
    """What may lie between a run and the next line's, over and under each bound."""
    parts = [
        "".join(rng.choice(" \t\"',") for _ in range(rng.randint(0, 9))),
        rng.choice(["", "+"]),
        " " * rng.randint(0, 5),
        rng.choice(["", "\\r"]),
        rng.choice(["\n", "\r\n", "\\n", "\r", ""]),
        "".join(rng.choice(_BETWEEN) for _ in range(rng.randint(0, 17))),
        rng.choice(["", "#", ";", ">", "*", "//", "// ", "-- ", "--", "+ ", "+", "+'"]),
        "".join(rng.choice(" \t\"'") for _ in range(rng.randint(0, 9))),
    ]
    return "".join(parts)


def _line_end(rng: random.Random) -> str:
    pads = "=" * rng.randint(0, 3)
    tail = "".join(rng.choice(" \t\"',;+") for _ in range(rng.randint(0, 9)))
    return pads + tail + rng.choice(["", "\n", "\r\n", "\\n", "\\r", "\r", " more", "\\t"])


def test_texts_that_reach_the_next_line_test() -> None:
    rng = random.Random(7)
    texts = []
    for _ in range(20000):
        run = rng.choice([B64_LINE, "abcd", "abc", "a+/b", "AbCd-_x", "ab", B64_LINE[:5]])
        texts.append(f"x {CAMEL}{_gap(rng)}{run}{_line_end(rng)}")
    assert disagreements(texts) == []
    # Both answers are reached often, so neither branch goes untested.
    quiet = sum(map(python, texts))
    assert 2000 < quiet < 18000


def test_corpora_agent_turns_and_floor_texts() -> None:
    assert disagreements(differential_texts("gate")) == []
