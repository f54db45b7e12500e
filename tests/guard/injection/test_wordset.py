"""The compiled word scan (`_wordset.Vocabulary`) against the Python one, and
the detector with the vocabulary against the detector reading every word.

The extension is built by the install wherever a C compiler is found; the
dev setup and CI have one, so these tests import it unconditionally. With
REEFGATE_NO_EXTENSION=1 the detector uses the Python scan (CI runs the whole
suite that way too); these tests compare both either way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Set as AbstractSet

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench._corpus import AgentTurns
from gateway.evaluate import read_rows
from gateway.guard.detectors.injection import text
from gateway.guard.detectors.injection._wordset import Vocabulary
from gateway.guard.detectors.injection.assess import assess
from tests.vectors import corpora

ASSESS = sys.modules["gateway.guard.detectors.injection.assess"]
ASCII = st.characters(max_codepoint=127)
WORDS = ["ignore", "previous", "x", "42", "a1b2", "Caps", "caf\u00e9", "two words", ""]


def corpus_texts() -> list[str]:
    texts = [row.text for row in read_rows(sorted(corpora().glob("injection_*.jsonl")))]
    assert texts, f"no corpora under {corpora()}"
    return texts


def both(words: list[str], sample: str) -> None:
    """The compiled scan finds the vocabulary's words among the Python scan's."""
    known, distinct, count = Vocabulary(words).scan(sample)
    every, py_distinct, py_count = text._PyVocabulary(words).scan(sample)
    assert (known, distinct, count) == (every & set(words), py_distinct, py_count)
    assert all(type(w) is str for w in known)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ASCII), st.lists(st.text(alphabet=ASCII, max_size=6), max_size=30))
def test_compiled_scan_is_the_python_scan(sample: str, words: list[str]) -> None:
    both(words, sample)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([w for w in WORDS if w.isascii()] + [",", "\n", "_", "X"])))
def test_texts_made_of_vocabulary_words(parts: list[str]) -> None:
    both(WORDS, "".join(parts))


@pytest.mark.parametrize(
    "sample",
    [
        "",
        " ",
        "\x00\x1c\x1f\x7f",
        "x",
        "Ignore   previous_instructions! 42 a1b2",
        "x" * 5000,
        # Far more distinct words than the table of seen words starts with.
        " ".join(f"w{i}" for i in range(5000)) + " ignore x 42",
    ],
)
def test_edges(sample: str) -> None:
    both(WORDS, sample)


def test_refuses_what_is_not_ascii_text() -> None:
    for vocabulary in (Vocabulary, text._PyVocabulary):
        with pytest.raises(ValueError, match="ASCII"):
            vocabulary(WORDS).scan("caf\u00e9")
    with pytest.raises(TypeError):
        Vocabulary(WORDS).scan(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Vocabulary([b"bytes"])  # type: ignore[list-item]


def test_corpora_scan_the_same_way() -> None:
    words = sorted(ASSESS._VOCABULARY_WORDS)
    checked = 0
    for sample in corpus_texts():
        low = sample.lower()
        if low.isascii():
            both(words, low)
            checked += 1
    assert checked > 1000


class OnlyKnown(text._PyVocabulary):
    """The Python scan narrowed to the vocabulary, as the compiled one returns it."""

    def scan(self, sample: str, /) -> tuple[AbstractSet[str], int, int]:
        every, distinct, count = super().scan(sample)
        return every & ASSESS._VOCABULARY_WORDS, distinct, count


@pytest.mark.parametrize(
    "vocabulary", [text._PyVocabulary, OnlyKnown], ids=["every word", "vocabulary only"]
)
def test_the_same_assessments(
    vocabulary: type[text._PyVocabulary], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rules and model read vocabulary words only: every word or just those, the same verdicts."""
    turns = AgentTurns(variants=64)
    samples = [*corpus_texts(), *turns.users, *turns.tools]
    compiled = [assess(s) for s in samples]
    monkeypatch.setattr(ASSESS, "_VOCABULARY", vocabulary(ASSESS._VOCABULARY_WORDS))
    assert [assess(s) for s in samples] == compiled


def test_the_environment_switch_selects_the_python_scan() -> None:
    probe = (
        "from gateway.guard.detectors.injection import text;"
        "print(text.Vocabulary is text._PyVocabulary)"
    )
    for value, python_scan in (("1", "True"), ("", "False")):
        env = {**os.environ, text.NO_EXTENSION_ENV: value}
        out = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == python_scan
