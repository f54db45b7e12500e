"""The secret scan's prefilter never starts a search past a place where it matches.

`prefix.alternatives` reads, from each search's pattern, the ways a match can
look around its start (characters before it from lookbehinds, after it from
the pattern); `_anchors.Prefilter.places` (C) hands each search the places
where one of its ways holds (the first few, or the first of many). If a way
missed a character that a match has, the match would not be tried and a
secret would go unreported. So: the reader on small patterns of each kind,
every match of every search on the corpora, the agent turns, every rule
sample (plain and wrapped) and generated texts (each must satisfy a way, and
be one of the places the C code gives its search, or come after the first
when there are too many to keep), the places against the tables read in
Python, and the scan with and without the prefilter on the same texts.
test_floor_differential.py holds the whole floor to its frozen reference
with and without the extension.
"""

from __future__ import annotations

import re
from array import array
from typing import Any

import pytest

from gateway.guard.detectors.secrets import _anchors, engine
from gateway.guard.detectors.secrets._anchors import Prefilter
from gateway.guard.detectors.secrets.prefix import alternatives
from tests.guard import test_floor_differential as floor_texts
from tests.guard.texts import differential_texts


def chars(text: str) -> frozenset[int]:
    return frozenset(text.encode())


DIGITS = chars("0123456789")
THREE_DIGITS = "|".join(f"{n:03d}" for n in range(300))


@pytest.mark.parametrize(
    ("pattern", "want"),
    [
        ("abc", [{0: chars("a"), 1: chars("b"), 2: chars("c")}]),
        # Each alternative is a way of its own.
        (
            "a(?:bc|d)e",
            [
                {0: chars("a"), 1: chars("b"), 2: chars("c"), 3: chars("e")},
                {0: chars("a"), 1: chars("d"), 2: chars("e")},
            ],
        ),
        ("a[xy]{2}z", [{0: chars("a"), 1: chars("xy"), 2: chars("xy"), 3: chars("z")}]),
        # After a repeat that may run longer, where the match stands is unknown.
        ("ab?c", [{0: chars("a")}]),
        ("ax{2,3}c", [{0: chars("a"), 1: chars("x"), 2: chars("x")}]),
        # Lookbehinds say what stands before the start, lookaheads what follows.
        ("(?<=xy)a", [{-2: chars("x"), -1: chars("y"), 0: chars("a")}]),
        ("a(?<=[0-9]a)b", [{-1: DIGITS, 0: chars("a"), 1: chars("b")}]),
        (
            "a(?=bc|d)",
            [{0: chars("a"), 1: chars("b"), 2: chars("c")}, {0: chars("a"), 1: chars("d")}],
        ),
        ("a(?=b)[a-c]", [{0: chars("a"), 1: chars("b")}]),
        # Negative lookarounds and anchors require nothing.
        ("a(?!b)c\\b", [{0: chars("a"), 1: chars("c")}]),
        ("a(?i:b)", [{0: chars("a"), 1: chars("bB")}]),
        ("(?i)ab", [{0: chars("aA"), 1: chars("bB")}]),
        ("(a)\\1b", [{0: chars("a")}]),
        # Only outside ASCII: no ASCII text can match.
        ("a[^\\x00-\\x7f]b", []),
        # The window: offsets -2 .. 3 only.
        (
            "(?<=wxyz)abcdef",
            [
                {
                    -2: chars("y"),
                    -1: chars("z"),
                    0: chars("a"),
                    1: chars("b"),
                    2: chars("c"),
                    3: chars("d"),
                }
            ],
        ),
        # Too many ways: that alternation requires nothing, but has one width.
        (f"a(?:{THREE_DIGITS})x", [{0: chars("a")}]),
        (f"a(?:{THREE_DIGITS})x(?<=[0-9]x)", [{0: chars("a"), 3: DIGITS}]),
    ],
)
def test_what_the_reader_takes_from_a_pattern(
    pattern: str, want: list[dict[int, frozenset[int]]]
) -> None:
    assert alternatives(re.compile(pattern), 2, 4) == want


def _texts() -> list[str]:
    texts = differential_texts("prefilter", seed=11, generated=2000)
    for sample in floor_texts.SAMPLES:
        texts += floor_texts._wrappings(sample)
    return texts


TEXTS = _texts()
SEARCHES: list[tuple[re.Pattern[Any], bool]] = [(rx, False) for _, rx, _ in engine._TEXT_SEARCHES]
SEARCHES += [(rx, True) for _, rx, _ in engine._LOWER_SEARCHES]


TABLES = engine.prefilter_tables()
PLACES = Prefilter(
    TABLES.anchored,
    TABLES.searches,
    TABLES.bucket_ways,
    TABLES.way_start,
    TABLES.checks,
    TABLES.maps,
)


def _holds(way: dict[int, bytes], raw: bytes, at: int) -> bool:
    return all(m[raw[at + k]] for k, m in way.items() if 0 <= at + k < len(raw))


def test_every_match_of_every_search_is_one_of_its_ways_and_of_its_places() -> None:
    matches = 0
    skipped = 0
    overflowed = 0
    for text in TEXTS:
        if not text.isascii():
            continue
        raw = text.encode()
        low = raw.lower()
        places = PLACES.places(text)
        assert places is not None
        for i, (rx, lowered) in enumerate(SEARCHES):
            subject: str | bytes = low if lowered else text
            at = places[i]
            skipped += at is None
            overflowed += at is not None and len(at) > _anchors.PLACES_KEPT
            m = rx.search(subject)
            while m is not None:
                start = m.start()
                matches += 1
                assert any(_holds(way, raw, start) for way in TABLES.ways[i]), (
                    text[start : start + 40],
                    i,
                )
                # Matched only at its places, or searched for from the first of many.
                assert at is not None, (text[start : start + 40], i)
                if len(at) > _anchors.PLACES_KEPT:
                    assert at[0] <= start
                else:
                    assert start in at, (text[start : start + 40], i, at)
                m = rx.search(subject, start + 1)
    assert matches > 2000
    # Most searches of most texts are not run at all; some have too many places to keep.
    assert skipped > len(TEXTS) * len(SEARCHES) // 2
    assert overflowed > 0


def test_the_places_are_where_a_way_holds_at_an_anchor() -> None:
    """Each search's places, against the tables in Python: every anchor byte
    of the search where one of its ways holds, in order, as many as are kept."""
    anchored = array("I")
    anchored.frombytes(TABLES.anchored)
    checked = overflowed = 0
    for text in [*TEXTS[::4], "k" * 40, "key=" * 30, "=" * 20, "", "k"]:
        if not text.isascii():
            continue
        raw = text.encode()
        places = PLACES.places(text)
        assert places is not None
        for i in range(len(SEARCHES)):
            want = [
                p
                for p in range(len(raw))
                if anchored[raw[p]] >> i & 1 and any(_holds(w, raw, p) for w in TABLES.ways[i])
            ][: _anchors.PLACES_KEPT + 1]
            assert places[i] == (want or None), (text[:80], i)
            checked += bool(want)
            overflowed += len(want) > _anchors.PLACES_KEPT
    assert checked > 2000
    assert overflowed > 0


def test_the_scan_is_the_same_with_and_without_the_prefilter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Long texts get the same candidates (the same searches, started later);
    short ones take those searches instead of the one combined pattern, whose
    candidates differ but are also a superset: the findings are the same."""
    found = 0
    for text in TEXTS:
        padded = text + " " * max(0, engine._SPLIT_AT - len(text))
        compiled_candidates, compiled_scan = engine._candidates(padded), engine.scan(text)
        with monkeypatch.context() as patch:
            patch.setattr(engine, "_PLACES", None)
            assert engine._candidates(padded) == compiled_candidates, padded[:200]
            want = engine.scan(text)
        assert compiled_scan == want, text[:200]
        found += bool(want)
    assert found > 1000


def test_the_compiled_lower_is_the_ascii_bytes_lowered() -> None:
    samples = ["", "".join(map(chr, range(128))), *differential_texts("lower", generated=300)]
    samples += ["Ab@[Z`z{" * n + "Q" * (n % 7) for n in (1, 3, 15, 16, 17, 64, 1000)]
    checked = 0
    for sample in samples:
        if not sample.isascii():
            with pytest.raises(ValueError, match="ASCII"):
                _anchors.lower(sample)
            continue
        assert _anchors.lower(sample) == sample.encode("ascii").lower()
        assert engine._LOWER(sample) == sample.encode("ascii").lower()
        checked += 1
    assert checked > 100
    with pytest.raises(TypeError):
        _anchors.lower(b"bytes")  # type: ignore[arg-type]


def test_the_compiled_prefilter_checks_its_input() -> None:
    t = TABLES
    assert PLACES.places("plain words here") is not None
    assert PLACES.places("plain wörds here") is None
    with pytest.raises(TypeError):
        PLACES.places(b"text")  # type: ignore[arg-type]
    good: list[Any] = [t.anchored, t.searches, t.bucket_ways, t.way_start, t.checks, t.maps]
    broken = {
        0: t.anchored[:-4],
        1: t.searches[:-1],
        3: array("i", [*t.way_start[:-1], t.way_start[-1] + 1]),
        4: array("i", [*t.checks[:-1], len(t.maps) // 256]),
        2: array("i", [*t.bucket_ways[:-1], len(t.way_start)]),
        5: t.maps[:-1],
    }
    for at, value in broken.items():
        args = [*good]
        args[at] = value
        with pytest.raises(ValueError):
            Prefilter(*args)
    with pytest.raises(TypeError):
        Prefilter(*[t.anchored, t.searches.tobytes(), *good[2:]])
