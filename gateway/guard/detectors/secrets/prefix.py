"""What must stand around a pattern's match, read from the pattern: its alternatives'
characters before and after the start.

The secret scan's searches each start with one anchor character and test a
probe there. `alternatives` reads a compiled pattern's parse tree and returns
a list of ways a match can look near its start: each a map from offsets
(negative ones before the match, read off its lookbehinds) to the ASCII
characters that can stand there. Every match satisfies at least one of them:
they are a superset, never less.

* A top-level alternation, or one inside a group or an assertion, splits a
  way in as many (up to `_MAX_WAYS`; beyond, the alternation adds nothing).
* A lookbehind of width w at offset o says what stands at o - w .. o - 1;
  a lookahead what stands from o on; both leave the offset where it was.
  The separator rules, for one, hold their known prefixes in lookbehinds
  ("dckr_pat" before "_"), and their bodies in a lookahead.
* A repeat is read for its least count; from a repeat that may run longer,
  or anything the reader does not model (backreferences, conditionals,
  negative lookarounds), the offset is unknown and nothing further counts.

The compiled prefilter (`_anchors.c`) tests the ways at every anchor of an
ASCII text and hands each search the first place where one holds: no match
can start before it.
"""

from __future__ import annotations

import re
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

ASCII = frozenset(range(128))
# str.isspace() over ASCII is the Unicode-mode \s (it adds \x1c-\x1f); its
# complement under re.ASCII is the wider \S. Taking the wider of each keeps a superset.
_SPACE = frozenset(c for c in ASCII if chr(c).isspace())
_NOT_SPACE = ASCII - frozenset(b" \t\n\r\f\v")
_DIGIT = frozenset(range(0x30, 0x3A))
_WORD = frozenset(c for c in ASCII if chr(c).isalnum() or c == 0x5F)
_CATEGORIES = {
    "CATEGORY_DIGIT": _DIGIT,
    "CATEGORY_NOT_DIGIT": ASCII - _DIGIT,
    "CATEGORY_SPACE": _SPACE,
    "CATEGORY_NOT_SPACE": _NOT_SPACE,
    "CATEGORY_WORD": _WORD,
    "CATEGORY_NOT_WORD": ASCII - _WORD,
}


def _chars(op: Any, av: Any, icase: bool) -> frozenset[int]:
    """The ASCII characters one character-matching item can match."""
    out: set[int] = set()
    wide = False  # a character outside ASCII, which may fold to one inside it
    if op is sre.LITERAL:
        out.add(av)
        wide = av > 0x7F
    elif op is sre.NOT_LITERAL:
        out = set(ASCII) - {av}
    elif op is sre.ANY:
        return ASCII
    elif op is sre.IN:
        negate = False
        for item_op, item in av:
            if item_op is sre.NEGATE:
                negate = True
            elif item_op is sre.LITERAL:
                out.add(item)
                wide |= item > 0x7F
            elif item_op is sre.RANGE:
                low, high = item
                out.update(range(low, min(high, 0x7F) + 1))
                wide |= high > 0x7F
            elif item_op is sre.CATEGORY and str(item) in _CATEGORIES:
                out |= _CATEGORIES[str(item)]
            else:
                return ASCII
        if negate:
            return ASCII if icase else ASCII - frozenset(out)
    else:
        raise ValueError(f"not a character item: {op}")
    if icase:
        if wide:
            return ASCII
        out |= {ord(chr(c).swapcase()) for c in out if chr(c).isalpha()}
    return frozenset(c for c in out if c <= 0x7F)


# Past this many ways, an alternation is read as saying nothing.
_MAX_WAYS = 256
# Offsets tracked from the anchor; further on the offset counts as unknown.
_MAX_OFFSET = 64

Way = dict[int, frozenset[int]]  # offset from the match start -> allowed ASCII codes
_State = tuple[int | None, Way]  # where the reading stands (None: unknown), and what it found


class _Reader:
    def __init__(self, back: int, width: int) -> None:
        self.back = back
        self.width = width

    def _at(self, way: Way, at: int, chars: frozenset[int]) -> Way | None:
        """``way`` with ``chars`` required at ``at``; None if nothing can stand there."""
        if not -self.back <= at < self.width:
            return way
        before = way.get(at, ASCII)
        now = before & chars
        if not now:
            return None
        if now == before:
            return way
        return {**way, at: now}

    def seq(self, items: Any, states: list[_State], icase: bool) -> list[_State]:
        for op, av in items:
            if not states:
                break
            if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
                chars = _chars(op, av, icase)
                out: list[_State] = []
                for at, way in states:
                    if at is None:
                        out.append((None, way))
                    elif (narrowed := self._at(way, at, chars)) is not None:
                        out.append((at + 1 if at + 1 < _MAX_OFFSET else None, narrowed))
                states = out
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                low, high, sub = av
                for _ in range(min(low, _MAX_OFFSET)):
                    states = _distinct(self.seq(sub, states, icase))
                lo, hi = sub.getwidth()
                if high != low or lo != hi or low > _MAX_OFFSET:
                    states = [(None, way) for _, way in states]
            elif op is sre.SUBPATTERN:
                _, add, remove, sub = av
                states = self.seq(sub, states, (icase or bool(add & re.I)) and not remove & re.I)
            elif op is sre.ATOMIC_GROUP:
                states = self.seq(av, states, icase)
            elif op is sre.BRANCH:
                states = self._branch(av[1], states, icase)
            elif op is sre.ASSERT:
                direction, sub = av
                out = []
                for at, way in states:
                    if at is None:
                        out.append((None, way))
                        continue
                    start = at - sub.getwidth()[0] if direction < 0 else at
                    out += [(at, found) for _, found in self.seq(sub, [(start, way)], icase)]
                states = _distinct(out)
            elif op in (sre.ASSERT_NOT, sre.AT):
                pass  # zero-width, and says nothing that must stand anywhere
            else:
                states = [(None, way) for _, way in states]
        return states

    def _branch(self, branches: Any, states: list[_State], icase: bool) -> list[_State]:
        out: list[_State] = []
        for sub in branches:
            out += self.seq(sub, list(states), icase)
        out = _distinct(out)
        if len(out) <= _MAX_WAYS:
            return out
        # Too many ways: the alternation requires nothing, and where it ends
        # is known only if every branch has one and the same width.
        widths = {sub.getwidth() for sub in branches}
        lo, hi = next(iter(widths))
        if len(widths) > 1 or lo != hi:
            return [(None, way) for _, way in states]
        return [
            (at + lo if at is not None and at + lo < _MAX_OFFSET else None, way)
            for at, way in states
        ]


def _distinct(states: list[_State]) -> list[_State]:
    found: dict[tuple[object, ...], _State] = {}
    for at, way in states:
        found.setdefault((at, *sorted(way.items())), (at, way))
    return list(found.values())


def alternatives(pattern: re.Pattern[Any], back: int, width: int) -> list[Way]:
    """The ways a match of ``pattern`` can look from ``back`` characters before
    its start to ``width`` after it: every match satisfies one of them.

    Offsets outside that window, and offsets a way does not name, allow any
    character. An empty list: the pattern cannot match ASCII text.
    """
    tree = sre_parse.parse(pattern.pattern, pattern.flags)
    states = _Reader(back, width).seq(list(tree), [(0, {})], bool(pattern.flags & re.I))
    return [way for _, way in _distinct(states)]
