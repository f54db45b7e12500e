"""The secret scan's prefilter never starts a search past a place where it matches.

`prefix.follow_sets` reads, from each search's pattern, the characters that
can follow its anchor; `_anchors.first_places` (C) hands each search the first
place where they hold. If a set missed a character that a match has, the
search would start too late and a secret would go unreported. So: the reader
on small patterns of each kind, every match of every search on the corpora,
the agent turns, every rule sample (plain and wrapped) and generated texts
(each must pass the tables the C code reads), and the scan with and without
the prefilter on the same texts. test_floor_differential.py holds the
whole floor to its frozen reference with and without the extension.
"""

from __future__ import annotations

import re
import string

import pytest

from gateway.guard.detectors.secrets import engine
from gateway.guard.detectors.secrets._anchors import first_places
from gateway.guard.detectors.secrets.prefix import ASCII, follow_sets
from tests.guard import test_floor_differential as floor_texts
from tests.guard.texts import differential_texts


def chars(text: str) -> frozenset[int]:
    return frozenset(text.encode())


@pytest.mark.parametrize(
    ("pattern", "flags", "want"),
    [
        ("abc", 0, [chars("a"), chars("b"), chars("c"), ASCII]),
        ("a[0-2]x", 0, [chars("a"), chars("012"), chars("x"), ASCII]),
        # A match that can end earlier lets anything follow from there on.
        ("a(?:bc|d)e", 0, [chars("a"), chars("bd"), chars("ce"), ASCII]),
        ("a(?:bc|de)f", 0, [chars("a"), chars("bd"), chars("ce"), chars("f")]),
        ("ab?c", 0, [chars("a"), chars("bc"), ASCII, ASCII]),
        ("ab?cd", 0, [chars("a"), chars("bc"), chars("cd"), ASCII]),
        ("a[xy]{2,3}z", 0, [chars("a"), chars("xy"), chars("xy"), chars("xyz")]),
        ("a(?<=xa)(?=b)b(?!c)d", 0, [chars("a"), chars("b"), chars("d"), ASCII]),
        ("a(?i:b)c", 0, [chars("a"), chars("bB"), chars("c"), ASCII]),
        ("ab", re.I, [chars("aA"), chars("bB"), ASCII, ASCII]),
        ("a[^b]", 0, [chars("a"), ASCII - chars("b"), ASCII, ASCII]),
        (r"a\d\s", re.A, [chars("a"), chars(string.digits), chars(" \t\n\r\f\v"), ASCII]),
        (r"(a)\1b", 0, [chars("a"), ASCII, ASCII, ASCII]),
        ("a[^\\x00-\\x7f]b", 0, [chars("a"), frozenset(), chars("b"), ASCII]),
    ],
)
def test_what_the_reader_takes_from_a_pattern(
    pattern: str, flags: int, want: list[frozenset[int]]
) -> None:
    got = follow_sets(re.compile(pattern, flags), 4)
    if pattern == r"a\d\s":
        assert got[2] >= want[2]  # Unicode-mode \s adds \x1c-\x1f: a superset is fine
        got[2] = want[2]
    assert got == want


def _texts() -> list[str]:
    texts = differential_texts("prefilter", seed=11, generated=2000)
    for sample in floor_texts.SAMPLES:
        texts += floor_texts._wrappings(sample)
    return texts


TEXTS = _texts()
SEARCHES = [(rx, False) for _, rx, _ in engine._TEXT_SEARCHES]
SEARCHES += [(rx, True) for _, rx, _ in engine._LOWER_SEARCHES]


def test_every_match_of_every_search_passes_the_tables() -> None:
    width = engine._FOLLOW_WIDTH
    matches = 0
    for text in TEXTS:
        if not text.isascii():
            continue
        raw = text.encode()
        low = raw.lower()
        for i, (rx, lowered) in enumerate(SEARCHES):
            maps = engine._FOLLOW_SETS[i * width * 256 : (i + 1) * width * 256]
            subject: str | bytes = low if lowered else text
            m = rx.search(subject)  # type: ignore[arg-type]
            while m is not None:
                at = m.start()
                matches += 1
                assert raw[at] in range(256) and engine._ANCHORED[
                    4 * raw[at] : 4 * raw[at] + 4
                ] != bytes(4)
                for k in range(width):
                    if at + k < len(raw):
                        assert maps[k * 256 + raw[at + k]], (text[at : at + 20], k)
                m = rx.search(subject, at + 1)  # type: ignore[arg-type]
    assert matches > 2000


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
            patch.setattr(engine, "_first_places", None)
            assert engine._candidates(padded) == compiled_candidates, padded[:200]
            want = engine.scan(text)
        assert compiled_scan == want, text[:200]
        found += bool(want)
    assert found > 1000


def test_the_compiled_prefilter_checks_its_input() -> None:
    args = (engine._ANCHORED, engine._FOLLOW_SETS, engine._FOLLOW_WIDTH)
    assert first_places("plain words here", *args) is not None
    assert first_places("plain wörds here", *args) is None
    with pytest.raises(ValueError):
        first_places("text", engine._ANCHORED, engine._FOLLOW_SETS[:-1], engine._FOLLOW_WIDTH)
    with pytest.raises(ValueError):
        first_places("text", engine._ANCHORED[:-4], engine._FOLLOW_SETS, engine._FOLLOW_WIDTH)
    with pytest.raises(TypeError):
        first_places(b"text", *args)  # type: ignore[arg-type]
