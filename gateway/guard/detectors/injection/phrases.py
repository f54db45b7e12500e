"""Phrase rules compiled and indexed, and the search for them in a text."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import product
from typing import Final

from gateway.guard.detectors.injection.gates import _top_level, _Ways
from gateway.guard.detectors.injection.rules import PHRASES
from gateway.guard.detectors.injection.rules.vocab import _EXTRACT_GENERIC_LABEL, _HOWTO
from gateway.guard.detectors.injection.text import _LEET, _tokens, _words
from gateway.guard.detectors.injection.verdict import Hit as _Hit


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    group: str  # the first hit of a group wins (strong variants come first)
    signal: str
    level: int
    label: str
    alts: tuple[re.Pattern[str], ...]  # the pattern's top-level alternatives
    starts: frozenset[str]  # a match is tried only where one of these begins a word
    gate: frozenset[str]  # one of these words must occur somewhere


_PHRASE_RULES: Final = tuple(
    _Rule(
        _name,
        group,
        signal,
        level,
        label,
        tuple(re.compile(alt) for alt in _top_level(pattern)),
        _words(starts),
        _words(gate) or _words(starts),
    )
    for _name, group, signal, level, label, starts, gate, pattern in PHRASES
)
_PHRASE_WAYS: Final = _Ways.of([[a.pattern for a in r.alts] for r in _PHRASE_RULES])
# Every phrase's gate words, for the leetspeak check.
_TRIGGERS: Final = frozenset().union(*(r.gate for r in _PHRASE_RULES))


def _leet_spellings(words: frozenset[str]) -> frozenset[str]:
    """The words that `_LEET` maps onto one of `words` and that mix letters
    and digits: a set lookup then replaces translating every such word."""
    if not all(w.isascii() and w.isalpha() for w in words):
        raise ValueError("leetspeak triggers must be ASCII letters")
    digit_for = {str(letter): chr(digit) for digit, letter in _LEET.items()}
    out: set[str] = set()
    for word in words:
        options = [(c, digit_for[c]) if c in digit_for else (c,) for c in word]
        out.update(
            spelling
            for spelling in map("".join, product(*options))
            if not spelling.isalpha() and not spelling.isdigit()
        )
    return frozenset(out)


# Leetspeak disguises English trigger words. Short ones are left out: their
# leet spellings ("1f", "d0", "a5") are what hex ids and hashes are made of,
# and each would send a text down the leetspeak path for nothing.
_LEET_TRIGGERS: Final = frozenset(
    w
    for r in _PHRASE_RULES
    if not r.name.startswith("multilingual.")
    for w in r.gate
    if w.isascii() and w.isalpha() and len(w) >= 4
)
_LEET_SPELLINGS: Final = _leet_spellings(_LEET_TRIGGERS)
# Every word the phrase rules may look for in a text's word set.
PHRASE_WORDS: Final = (
    _PHRASE_WAYS.words
    | _LEET_SPELLINGS
    | frozenset().union(*(r.gate | r.starts for r in _PHRASE_RULES))
)


def _match_at_starts(alts: list[re.Pattern[str]], s: str, keys: list[str]) -> re.Match[str] | None:
    """The leftmost match of the alternatives (tried in order at each
    position), looked for only where one of `keys` begins a word.

    Leftmost, not first found per key: `keys` comes from a set, whose order
    changes with the hash seed, and the quote in a verdict must not.
    """
    positions: set[int] = set()
    for key in keys:
        i = s.find(key)
        while i != -1:
            if i == 0 or not s[i - 1].isalnum():
                positions.add(i)
            i = s.find(key, i + 1)
    for i in sorted(positions):
        for alt in alts:
            m = alt.match(s, i)
            if m:
                return m
    return None


def _apply_phrases(
    low: str, words: AbstractSet[str], present: AbstractSet[str] | None = None
) -> list[_Hit]:
    keys = _PHRASE_WAYS.keys.intersection(words if present is None else present)
    if not keys:
        return []
    hits: list[_Hit] = []
    done: set[str] = set()
    # The patterns take any run of whitespace where words meet (line breaks
    # and indentation of wrapped tool output included), so they read the
    # casefolded text as it is, without a collapsed copy.
    for i, alts in _PHRASE_WAYS.live(keys, words, low).items():
        rule = _PHRASE_RULES[i]
        if rule.group in done or rule.gate.isdisjoint(words):
            continue
        starts = [w for w in rule.starts if w in words]
        if not starts:
            continue
        m = _match_at_starts([rule.alts[j] for j in alts], low, starts)
        if m is None:
            continue
        if rule.label == _EXTRACT_GENERIC_LABEL and _HOWTO.search(
            low, max(0, m.start() - 40), m.start()
        ):
            # "how to set the system prompt" is a question about a product.
            continue
        hits.append(_Hit(rule.signal, rule.level, rule.label, m.group()))
        done.add(rule.group)
    return hits


def _phrase_hits(
    low: str, words: AbstractSet[str], present: AbstractSet[str] | None = None
) -> list[_Hit]:
    hits = _apply_phrases(low, words, present)
    if hits:
        return hits
    # Leetspeak matters only where a word is a leet spelling of a trigger.
    if _LEET_SPELLINGS.isdisjoint(words if present is None else present):
        return hits
    leet = low.translate(_LEET)
    return _apply_phrases(leet, set(_tokens(leet)))
