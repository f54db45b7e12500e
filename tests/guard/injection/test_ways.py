"""The rule index's test of which alternatives can match, in C (`_ways.WayTable.live`),
answers what its Python twin (`_Ways._py_live`) does, text for text.

An alternative it left out would be a phrase or template rule never run, so
the two are compared for both indexes on every corpus text, the bench's
agent turns and the floor's generated texts (each with the words the
detector reads from it), on texts built from the ways' own needs with one
need taken away, and on arbitrary word sets with hypothesis.
"""

from __future__ import annotations

import importlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.guard.detectors.injection import phrases, templates
from gateway.guard.detectors.injection._ways import WayTable
from gateway.guard.detectors.injection.gates import _Table, _Way, _Ways, compiled_ways
from tests.guard.texts import differential_texts

# The package re-exports `assess` the function under the module's name.
assess = importlib.import_module("gateway.guard.detectors.injection.assess")

INDEXES = {"phrases": phrases._PHRASE_WAYS, "templates": templates._TEMPLATE_WAYS}


TABLES: dict[int, _Table] = {}


def table(ways: _Ways) -> _Table:
    """The compiled table of ``ways``, built here: REEFGATE_NO_EXTENSION hides the index's own."""
    if id(ways) not in TABLES:
        TABLES[id(ways)] = WayTable(compiled_ways(ways.ways), ways.index, len(ways.owners))
    return TABLES[id(ways)]


def both(ways: _Ways, words: set[str] | frozenset[str], low: str) -> tuple[list[int], list[int]]:
    keys = ways.keys.intersection(words)
    return table(ways).live(keys, words, low), ways._py_live(keys, words, low)


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, frozenset[str]]]:
    """Each text casefolded as the detector reads it, with its word set."""
    out = []
    for text in differential_texts("ways"):
        _, low, words, _ = assess._rules(text)
        out.append((low, frozenset(words)))
    return out


@pytest.mark.parametrize("name", INDEXES)
def test_the_compiled_index_agrees_on_every_text(
    name: str, texts: list[tuple[str, frozenset[str]]]
) -> None:
    ways = INDEXES[name]
    differ = []
    live = 0
    for low, words in texts:
        compiled, python = both(ways, words, low)
        if compiled != python:
            differ.append(low[:80])
        live += bool(python)
    assert not differ, differ[:5]
    # The texts reach the index's every branch, not only its empty answer.
    assert live > 200


def _needs(way: _Way) -> tuple[set[str], list[str]]:
    """Words and substrings that meet every need of ``way``."""
    words = set(way.singles)
    subs: list[str] = []
    for group in way.any_of:
        words.add(sorted(group)[0])
    for group, substrings in way.mixed:
        if substrings:
            subs.append(substrings[0])
        else:
            words.add(sorted(group)[0])
    return words, subs


@pytest.mark.parametrize("name", INDEXES)
def test_each_way_is_live_with_its_needs_and_only_with_all_of_them(name: str) -> None:
    ways = INDEXES[name]
    rng = random.Random(7)
    checked = 0
    for way in ways.ways:
        words, subs = _needs(way)
        key = next(w for w, ids in ways.index.items() if ways.ways.index(way) in ids)
        words.add(key)
        low = " ".join(sorted(words)) + " " + " ".join(subs)
        compiled, python = both(ways, frozenset(words), low)
        assert compiled == python
        assert way.alt in compiled
        # Without one of its words, this way cannot make the alternative live
        # (another way may, which both answers must then agree on).
        dropped = rng.choice(sorted(words))
        fewer = frozenset(words - {dropped})
        assert both(ways, fewer, " ".join(sorted(fewer)))[0] == ways._py_live(
            ways.keys.intersection(fewer), fewer, " ".join(sorted(fewer))
        )
        checked += 1
    assert checked == len(ways.ways)


VOCABULARY = sorted(phrases._PHRASE_WAYS.words | templates._TEMPLATE_WAYS.words)


@settings(max_examples=300, deadline=None)
@given(
    words=st.sets(st.sampled_from(VOCABULARY), max_size=40),
    extra=st.text(alphabet="@[]<>|{}`~^\\ ab", max_size=20),
)
def test_the_compiled_index_agrees_on_any_word_set(words: set[str], extra: str) -> None:
    low = " ".join(sorted(words)) + extra
    for ways in INDEXES.values():
        compiled, python = both(ways, words, low)
        assert compiled == python


def test_bad_calls_are_refused_as_the_python_twin_would() -> None:
    ways = phrases._PHRASE_WAYS
    with pytest.raises(KeyError):
        table(ways).live(frozenset({"not-a-key-word"}), frozenset(), "")
    with pytest.raises(TypeError):
        table(ways).live(frozenset(), ["a", "list"], "")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        WayTable(((5, (), (), ()),), {}, 1)
    with pytest.raises(ValueError):
        WayTable(((0, (), (), ()),), {"w": (3,)}, 1)
    with pytest.raises(ValueError):
        WayTable(((0, ("ok", 1), (), ()),), {}, 1)  # type: ignore[arg-type]
