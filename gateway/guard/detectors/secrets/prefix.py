"""What a pattern's match can hold in its first few characters, read from the pattern.

The secret scan's searches each start with one anchor character and test a
probe there. `follow_sets` reads a compiled pattern's parse tree and returns,
for each of the first characters of a match, the ASCII characters that can
stand there in some match: a superset, never less. Lookarounds and anchors
(zero-width) are passed over, a repeat's every count is followed, and
whatever the reader does not model (backreferences, conditionals) lets any
character stand from there on, as does the end of a match.

The compiled prefilter (`_anchors.c`) tests these sets at every anchor of an
ASCII text and hands each search the first place where its sets hold: no match
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


class _Reader:
    def __init__(self, width: int) -> None:
        self.width = width
        self.sets: list[set[int]] = [set() for _ in range(width)]
        # From this offset on any character may stand (an item not modelled).
        self.free_from = width

    def seq(self, items: Any, starts: set[int], icase: bool) -> set[int]:
        """Read `items` from each offset in `starts`; the offsets (< width) where they end."""
        for op, av in items:
            if not starts:
                break
            if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
                chars = _chars(op, av, icase)
                for at in starts:
                    self.sets[at] |= chars
                starts = {at + 1 for at in starts if at + 1 < self.width}
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                low, high, sub = av
                ends = set(starts) if low == 0 else set()
                current, count = set(starts), 0
                while current and (high == sre.MAXREPEAT or count < high):
                    current = self.seq(sub, current, icase)
                    count += 1
                    if count >= low:
                        if current <= ends:
                            break  # nothing new: more repeats reach the same offsets
                        ends |= current
                starts = ends
            elif op is sre.SUBPATTERN:
                _, add, remove, sub = av
                starts = self.seq(sub, starts, (icase or bool(add & re.I)) and not remove & re.I)
            elif op is sre.ATOMIC_GROUP:
                starts = self.seq(av, starts, icase)
            elif op is sre.BRANCH:
                joined: set[int] = set()
                for sub in av[1]:
                    joined |= self.seq(sub, set(starts), icase)
                starts = joined
            elif op in (sre.ASSERT, sre.ASSERT_NOT, sre.AT):
                pass  # zero-width
            else:
                self.free_from = min(self.free_from, *starts)
                return set()
        return starts


def follow_sets(pattern: re.Pattern[Any], width: int) -> list[frozenset[int]]:
    """For offsets 0 to width - 1 of a match, the ASCII characters (codes) that can stand there.

    An offset a match may not reach (it can end before) allows every character.
    """
    source = pattern.pattern
    tree = sre_parse.parse(source, pattern.flags)
    reader = _Reader(width)
    ends = reader.seq(list(tree), {0}, bool(pattern.flags & re.I))
    free = min(reader.free_from, *ends) if ends else reader.free_from
    return [ASCII if at >= free else frozenset(reader.sets[at]) for at in range(width)]
