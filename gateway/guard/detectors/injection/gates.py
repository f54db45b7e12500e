"""Words a regex's matches must contain, read off the regex (the "required
literal" analyser), and an index of rules by their rarest such word.

A regex is too slow to run over every text, but most texts lack some word
that every match of a phrase needs ("ignore ... previous ... instructions").
Each phrase rule is split into its top-level alternatives, and the words
every match of an alternative must contain are derived when the module
loads; the rarest of them index it, so an alternative is tried only when all
its needed words occur. The derived gates only ever skip work that cannot
match, so decisions are those of the plain rules.

Measured against declared keywords per rule (one gate word and one start
word must occur): `assess()` on the bench's agent turns took 12.6 µs (user
text) and 59.6 µs (tool output) with this index, 30.0 µs and 89.6 µs with
declared keywords, with identical decisions on the dev corpora.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol

from gateway import compiled

#
# A regex is too slow to run over every text, but most texts lack some word
# that every match of a phrase needs ("ignore ... previous ... instructions").
# Those words are read off the pattern itself, so that a rule edit can never
# leave a stale hand-written gate behind. The analysis is an
# over-approximation: it may miss required words (and then gate less), but
# every word it reports is one that a match cannot do without, given that
# words are maximal runs of alphanumeric characters (as in `_split_words`).

_RUN_CAP: Final = 64  # spellings tracked for one partial word
_SHAPE_CAP: Final = 32  # shapes tracked for one fragment before merging them
# Punctuation rare enough in ordinary text to be worth a substring check.
_RARE_PUNCT: Final = frozenset("@[]<>|{}`~^\\")
# A need that is a substring of the text rather than a whole word.
_SUBSTRING: Final = "\0"
_MAX_SUBSTRINGS: Final = 2

_Strs = frozenset[str] | None  # possible spellings; None: unknown
_Needs = frozenset[frozenset[str]]  # each set: one of these must occur


# How often the words that rules need occur in ordinary text: the percentage
# of 2 KB pieces (of Python stdlib source and docs, the benign corpora and
# bench text) that contain them, for those in at least 1%. Rules are looked
# up by their rarest needed words, so this decides speed only, never what
# matches.
def _percentages(spaced: str) -> dict[str, int]:
    return {word: int(pct) for word, _, pct in (item.partition(":") for item in spaced.split())}


_PERCENT_OF_TEXTS: Final[dict[str, int]] = _percentages(
    "the:63 to:48 in:47 a:45 for:44 and:44 of:43 is:37 from:28 with:28 you:25 s:25 i:24"
    " that:24 this:24 return:23 as:20 can:20 on:20 an:20 be:19 not:19 are:19 by:15 any:13"
    " 2:13 my:12 all:12 how:10 at:10 list:10 key:10 id:9 need:9 should:9 what:9 start:8"
    " t:8 m:8 will:8 true:8 set:8 type:8 have:8 your:7 request:7 which:7 has:7 new:7 api:6"
    " user:6 about:6 like:6 warn:6 re:6 provide:6 so:5 must:5 message:5 update:5 no:5"
    " its:5 token:5 data:5 write:5 was:5 text:5 model:5 before:5 delete:5 these:5 end:5"
    " who:5 let:5 context:5 copy:4 current:4 default:4 https:4 do:4 version:4 now:4"
    " task:4 given:4 without:4 response:4 information:4 read:4 here:4 header:4 out:4"
    " output:4 http:4 session:4 input:4 first:3 memory:3 been:3 auth:3 policy:3"
    " parameters:3 warning:3 history:3 does:3 character:3 send:3 server:3 stop:3 post:3"
    " never:3 filter:3 env:3 two:3 prompt:3 internal:2 tool:2 ignore:2 note:2 named:2"
    " language:2 put:2 describe:2 begin:2 access:2 exception:2 content:2 rules:2 ai:2"
    " state:2 share:2 following:2 mode:2 don:2 required:2 ethical:2 real:2 orders:2"
    " take:2 system:2 role:2 were:2 full:2 run:2 users:2 files:2 doesn:2 different:2"
    " break:2 keys:2 root:2 guidelines:2 sys:1 print:1 old:1 original:1 am:1 command:1"
    " responses:1 those:1 needs:1 mind:1 ll:1 human:1 environment:1 called:1 every:1"
    " initial:1 everything:1 off:1 free:1 date:1 encode:1 allowed:1 settings:1 safety:1"
    " tell:1 private:1 give:1 complete:1 safe:1 operator:1 previous:1 law:1 ways:1 got:1"
    " above:1 protocol:1 back:1 assistant:1 reverse:1 made:1 limitations:1 created:1"
    " password:1 conversation:1 become:1 variables:1 updated:1 show:1 forward:1"
    " existing:1 configuration:1 bound:1 secret:1 email:1 company:1 cannot:1 word:1"
    " purpose:1 entity:1 boundaries:1 isn:1 constraints:1 attention:1 override:1 meta:1"
    " follow:1 display:1 words:1 won:1 question:1 messages:1 initiate:1 earlier:1"
)

# The same measure for words that later rules need (2 KB pieces of the bench's
# agent turns, the benign corpora and stdlib source): without it, such a
# word counts as rare (0.3) and common text looks up rules under it.
_PERCENT_OF_TEXTS.update(
    _percentages(
        "if:33 it:25 get:17 file:14 use:13 after:10 line:9 would:9 function:9 order:9 result:9"
        " args:8 make:8 see:8 call:7 fetch:7 open:7 string:7 commit:7 always:6 d:6 n:6 into:6"
        " append:6 account:5 up:5 they:5 log:5 replace:5 add:4 them:4 remember:4 then:4 each:4"
        " load:4 job:4 store:4 keep:4 e:4 query:4 save:3 handle:3 non:3 continue:3 agent:3 page:3"
        " reply:3 record:3 arguments:3 lines:3 instead:3 move:3 process:3 base:2 change:2"
        " possible:2 del:2 long:2 13:2 main:2 go:2 work:2 32:2 remove:2 binary:2 decode:2"
        " address:2 include:2 events:1 reading:1 proceed:1 he:1 skip:1 written:1 done:1 much:1"
        " actual:1 convert:1 prefix:1"
    )
)


def _rarity(need: AbstractSet[str]) -> tuple[float, int]:
    """Expected cost of a need as an index key: lower is rarer."""
    if not all(w.isalnum() for w in need):
        return math.inf, 0  # substrings cannot be looked up in the word set
    return sum(_PERCENT_OF_TEXTS.get(w, 0.3) for w in need), len(need)


class _Shape(NamedTuple):
    """What a regex fragment can match, as far as whole words go.

    Without a separator (non-alphanumeric character or word boundary) in the
    match, `head` holds its possible texts. With one, `head` and `tail` are
    the possible partial words before the first and after the last
    separator, and `needs` the words the match contains whole. A need with
    punctuation in it is a substring of the text instead of a word.
    """

    split: bool
    head: _Strs
    needs: _Needs
    tail: _Strs


_EMPTY: Final = _Shape(False, frozenset({""}), frozenset(), None)
_ANY_RUN: Final = _Shape(False, None, frozenset(), None)
_ANY_SPLIT: Final = _Shape(True, None, frozenset(), None)
_SEPARATOR: Final = _Shape(True, frozenset({""}), frozenset(), frozenset({""}))


def _join(a: _Strs, b: _Strs) -> _Strs:
    if a is None or b is None:
        return None
    out = frozenset(x + y for x in a for y in b)
    return out if len(out) <= _RUN_CAP else None


def _union(a: _Strs, b: _Strs) -> _Strs:
    if a is None or b is None:
        return None
    out = a | b
    return out if len(out) <= _RUN_CAP else None


def _covers(a: _Strs, b: _Strs) -> bool:
    return a is None or (b is not None and b <= a)


def _concat(x: _Shape, y: _Shape) -> _Shape:
    if not x.split:
        if not y.split:
            return _Shape(False, _join(x.head, y.head), frozenset(), None)
        return _Shape(True, _join(x.head, y.head), y.needs, y.tail)
    if not y.split:
        return _Shape(True, x.head, x.needs, _join(x.tail, y.head))
    needs = x.needs | y.needs
    word = _join(x.tail, y.head)
    # Separators on both sides make the partial words meeting here whole,
    # unless one of them can be empty (then no word need sit here).
    if word is not None and "" not in word:
        needs |= {word}
    return _Shape(True, x.head, needs, y.tail)


def _closest(term: _Needs, need: frozenset[str]) -> frozenset[str]:
    """The need of `term` sharing most words with `need` (then the rarest)."""
    return max(term, key=lambda n: (len(n & need), -_rarity(n)[0], sorted(n)))


def _weaken(terms: list[_Needs]) -> _Needs:
    """Needs implied by any one of `terms` (an OR of ANDs made an AND of ORs).

    For each need of any term, the union of the closest need of every other
    term: each term implies its pick, so every term implies the union.
    """
    if not all(terms):
        return frozenset()
    out: set[frozenset[str]] = set()
    for need in set[frozenset[str]]().union(*terms):
        union = set(need)
        for term in terms:
            if need not in term:
                union |= _closest(term, need)
        out.add(frozenset(union))
    # A need that is a superset of another is implied by it.
    return frozenset(n for n in out if not any(o < n for o in out))


def _merge(shapes: list[_Shape]) -> list[_Shape]:
    """Fewer shapes that together still describe every match."""
    runs = [s for s in shapes if not s.split]
    out: list[_Shape] = []
    if runs:
        head = runs[0].head
        for s in runs[1:]:
            head = _union(head, s.head)
        out.append(_Shape(False, head, frozenset(), None))
    by_needs: dict[_Needs, _Shape] = {}
    for s in shapes:
        if s.split:
            o = by_needs.get(s.needs)
            by_needs[s.needs] = (
                s
                if o is None
                else _Shape(True, _union(o.head, s.head), s.needs, _union(o.tail, s.tail))
            )
    splits = list(by_needs.values())
    # A shape that needs more than another of no narrower extent adds nothing.
    splits = [
        s
        for i, s in enumerate(splits)
        if not any(
            j != i and o.needs <= s.needs and _covers(o.head, s.head) and _covers(o.tail, s.tail)
            for j, o in enumerate(splits)
            if o.needs != s.needs or j < i
        )
    ]
    if len(splits) > _SHAPE_CAP:
        # Shapes with the same partial words at their ends combine without
        # losing what later fragments join onto them; then, if need be, all.
        groups: dict[tuple[_Strs, _Strs], list[_Shape]] = {}
        for s in splits:
            groups.setdefault((s.head, s.tail), []).append(s)
        if len(groups) > _SHAPE_CAP:
            groups = {(None, None): splits}
        splits = []
        for group in groups.values():
            head, tail = group[0].head, group[0].tail
            for s in group[1:]:
                head, tail = _union(head, s.head), _union(tail, s.tail)
            splits.append(_Shape(True, head, _weaken([s.needs for s in group]), tail))
    return out + splits


def _concat_all(xs: list[_Shape], ys: list[_Shape]) -> list[_Shape]:
    return _merge([_concat(x, y) for x in xs for y in ys])


def _repeat(body: list[_Shape], lo: int, hi: int | None) -> list[_Shape]:
    if hi is not None and hi <= 3:
        out: list[_Shape] = []
        acc = [_EMPTY]
        for k in range(hi + 1):
            if k >= lo:
                out.extend(acc)
            if k < hi:
                acc = _concat_all(acc, body)
        return _merge(out)
    # Many repetitions: keep only what every one of them starts or ends with.
    if all(not s.split for s in body):
        more = [_EMPTY, _ANY_RUN]
    elif all(s.split for s in body):
        head, tail = body[0].head, body[0].tail
        for s in body[1:]:
            head, tail = _union(head, s.head), _union(tail, s.tail)
        more = [_EMPTY, _Shape(True, head, frozenset(), tail)]
    else:
        more = [_EMPTY, _ANY_RUN, _ANY_SPLIT]
    return _merge(more) if lo == 0 else _concat_all(body, _merge(more))


_ALNUM, _SEPS, _MIXED = 0, 1, 2  # what a character class can match
_BOUNDARY, _NOT_BOUNDARY = 3, 4  # what an escape can be besides
_CharSet = tuple[int, frozenset[str] | None]


def _chars_kind(chars: frozenset[str]) -> int:
    if all(c.isalnum() for c in chars):
        return _ALNUM
    if not any(c.isalnum() for c in chars):
        return _SEPS
    return _MIXED


def _char_shapes(kind: int, chars: frozenset[str] | None) -> list[_Shape]:
    if kind == _ALNUM:
        return [_Shape(False, chars, frozenset(), None)]
    if kind == _SEPS:
        if chars is not None and len(chars) == 1 and chars <= _RARE_PUNCT:
            return [_Shape(True, frozenset({""}), frozenset({chars}), frozenset({""}))]
        return [_SEPARATOR]
    return [_ANY_RUN, _SEPARATOR]


class _Shapes:
    """Shapes of a regex, by recursive descent over the syntax used here.

    Anything outside that syntax raises ValueError at import, so that a new
    construct cannot be misread into a wrong gate.
    """

    _ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}

    def __init__(self, src: str) -> None:
        self.src = src
        self.i = 0

    def parse(self) -> list[_Shape]:
        shapes = self._alt()
        if self.i != len(self.src):
            raise ValueError(f"unsupported regex syntax at {self.src[self.i :]!r}")
        return shapes

    def _peek(self, s: str) -> bool:
        return self.src.startswith(s, self.i)

    def _alt(self) -> list[_Shape]:
        shapes = self._seq()
        while self._peek("|"):
            self.i += 1
            shapes = _merge(shapes + self._seq())
        return shapes

    def _seq(self) -> list[_Shape]:
        acc = [_EMPTY]
        while self.i < len(self.src) and self.src[self.i] not in "|)":
            acc = _concat_all(acc, self._quantified(self._atom()))
        return acc

    def _atom(self) -> list[_Shape]:
        c = self.src[self.i]
        self.i += 1
        if c == "(":
            return self._group()
        if c == "[":
            return _char_shapes(*self._class())
        if c == "\\":
            kind, chars = self._escape(in_class=False)
            if kind == _BOUNDARY:
                return [_SEPARATOR]
            return [_EMPTY] if kind == _NOT_BOUNDARY else _char_shapes(kind, chars)
        if c == ".":
            return _char_shapes(_MIXED, None)
        if c in "^$":
            return [_SEPARATOR]
        if c in "*+?{})":
            raise ValueError(f"unsupported regex syntax at {self.src[self.i - 1 :]!r}")
        return _char_shapes(_chars_kind(frozenset(c)), frozenset(c))

    def _group(self) -> list[_Shape]:
        # Patterns share fragments (verbs, gaps, nouns); a group's shapes
        # depend on its text alone.
        start = self.i - 1
        end = _group_end(self.src, start)
        cached = _GROUP_SHAPES.get(self.src[start:end])
        if cached is not None:
            self.i = end
            return cached
        shapes = self._group_shapes()
        _GROUP_SHAPES[self.src[start : self.i]] = shapes
        return shapes

    def _group_shapes(self) -> list[_Shape]:
        kind = "(?:"
        for prefix in ("?:", "?=", "?!", "?<=", "?<!"):
            if self._peek(prefix):
                kind = f"({prefix}"
                self.i += len(prefix)
                break
        else:
            if self._peek("?"):
                raise ValueError(f"unsupported group at {self.src[self.i :]!r}")
        shapes = self._alt()
        if not self._peek(")"):
            raise ValueError("unbalanced parenthesis")
        self.i += 1
        if kind == "(?:":
            return shapes
        # A lookaround matches nothing itself, but a positive one over
        # punctuation ("(?<=\[)") marks a word boundary.
        if kind in ("(?=", "(?<=") and all(
            s.split and s.head == s.tail == frozenset({""}) for s in shapes
        ):
            return shapes
        return [_EMPTY]

    def _escape(self, *, in_class: bool) -> _CharSet:
        """(kind, characters) of an escape."""
        c = self.src[self.i]
        self.i += 1
        if not in_class and c in "bAZ":
            return _BOUNDARY, None
        if not in_class and c == "B":
            return _NOT_BOUNDARY, None
        if c in "Ws":
            return _SEPS, None
        if c in "wSD":
            return _MIXED, None
        if c == "d":
            return _ALNUM, None
        if c in self._ESCAPES:
            char = self._ESCAPES[c]
        elif c in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[c]
            char = chr(int(self.src[self.i : self.i + width], 16))
            self.i += width
        elif c.isalnum():
            raise ValueError(f"unsupported escape \\{c}")
        else:
            char = c
        return _chars_kind(frozenset(char)), frozenset(char)

    def _class(self) -> _CharSet:
        negated = self._peek("^")
        self.i += negated
        items: list[_CharSet] = []
        word = underscore = False
        first = True
        while not (self._peek("]") and not first):
            if self.i >= len(self.src):
                raise ValueError("unterminated character class")
            first = False
            c = self.src[self.i]
            self.i += 1
            if c == "\\":
                word |= self._peek("w")
                item = self._escape(in_class=True)
            else:
                item = (_chars_kind(frozenset(c)), frozenset(c))
            underscore |= item[1] == frozenset("_")
            if self._peek("-") and not self.src.startswith("-]", self.i) and item[1] is not None:
                self.i += 1
                hi_c = self.src[self.i]
                self.i += 1
                if hi_c == "\\":
                    hi_item = self._escape(in_class=True)
                    if hi_item[1] is None:
                        raise ValueError("unsupported class range")
                    (hi_c,) = hi_item[1]
                (lo_c,) = item[1]
                span = frozenset(map(chr, range(ord(lo_c), ord(hi_c) + 1)))
                item = (_chars_kind(span), span)
            items.append(item)
        self.i += 1
        kinds = {k for k, _ in items}
        if not negated:
            if len(kinds) > 1:
                return _MIXED, None
            chars = (
                None
                if any(s is None for _, s in items)
                else frozenset().union(*(s for _, s in items if s is not None))
            )
            return kinds.pop(), chars
        if word:
            return _SEPS, None  # outside \w: no letter or digit
        if underscore and kinds == {_SEPS} and any(s is None for _, s in items):
            return _ALNUM, None  # [^\W_]
        return _MIXED, None

    def _quantified(self, shapes: list[_Shape]) -> list[_Shape]:
        c = self.src[self.i] if self.i < len(self.src) else ""
        if c == "?":
            lo, hi = 0, 1
        elif c == "*":
            lo, hi = 0, None
        elif c == "+":
            lo, hi = 1, None
        elif c == "{":
            end = self.src.index("}", self.i)
            lo_s, comma, hi_s = self.src[self.i + 1 : end].partition(",")
            lo = int(lo_s or 0)
            hi = (int(hi_s) if hi_s else None) if comma else lo
            self.i = end
        else:
            return shapes
        self.i += 1
        if self._peek("?") or self._peek("+"):
            self.i += 1
        return _repeat(shapes, lo, hi)


_GROUP_SHAPES: Final[dict[str, list[_Shape]]] = {}


def _syntax(pattern: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, depth after it) for each `(`, `)` and `|` from `start`.

    Escaped characters and character classes are skipped: their parentheses
    and bars are literal.
    """
    depth = 0
    i = start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 1
        elif c == "[":
            i = _class_end(pattern, i)
            continue
        elif c in "()|":
            depth += (c == "(") - (c == ")")
            yield i, c, depth
        i += 1


def _group_end(pattern: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at `start`."""
    for i, c, depth in _syntax(pattern, start):
        if c == ")" and depth == 0:
            return i + 1
    raise ValueError("unbalanced parenthesis")


def _class_end(pattern: str, i: int) -> int:
    """The index just past the character class that opens at `i`."""
    i += 1
    i += pattern.startswith("^", i)
    i += pattern.startswith("]", i)
    while pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def _top_level(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern."""
    parts: list[str] = []
    start = 0
    for i, c, depth in _syntax(pattern):
        if c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    parts.append(pattern[start:])
    return parts


def _needs(pattern: str) -> tuple[_Needs, ...]:
    """For each way to match `pattern`: the words (and substrings) it needs.

    An empty entry means the pattern can match without anything known.
    """
    dnf: list[_Needs] = []
    for s in _Shapes(pattern).parse():
        needs = set(s.needs)
        # A match may begin or end inside a word, but it still contains
        # the partial word as a substring. Each spelling costs a pass over
        # the text when absent, so only a few are worth checking.
        for part in (s.head, s.tail) if s.split else (s.head,):
            if part is not None and "" not in part and len(part) <= _MAX_SUBSTRINGS:
                needs.add(frozenset(_SUBSTRING + w for w in part))
        dnf.append(frozenset(needs))
    # Ways that need a superset of another's words add nothing.
    return tuple(
        n
        for i, n in enumerate(dnf)
        if not any(o <= n and (o != n or j < i) for j, o in enumerate(dnf) if j != i)
    )


# --------------------------------------------------------------------------
# The index
# --------------------------------------------------------------------------

# A need, ready to check: its words, and substrings (punctuation, partial
# words); one of either must occur.
_Check = tuple[frozenset[str], tuple[str, ...]]


def _check(need: frozenset[str]) -> _Check:
    words = frozenset(w for w in need if w.isalnum())
    return words, tuple(sorted(w.lstrip(_SUBSTRING) for w in need - words))


class _Way(NamedTuple):
    """One way to match an alternative, besides its key: the words that must
    all occur, the word sets of which one must occur each, and the needs of
    which a word or a substring must occur."""

    alt: int
    singles: frozenset[str]
    any_of: tuple[frozenset[str], ...]
    mixed: tuple[_Check, ...]


@dataclass(frozen=True, slots=True)
class _Ways:
    """Every way to match a set of patterns, looked up by its rarest need.

    Each top-level alternative of each pattern is one or more ways (sets of
    needs). A way is indexed under the words of its rarest all-word need;
    the words found in a text thus pick the few ways worth checking, and a
    pattern is tried only with alternatives that have a way whose needs all
    occur.
    """

    owners: tuple[tuple[int, int], ...]  # alternative -> (pattern, alternative in it)
    index: dict[str, tuple[int, ...]]  # word -> ways keyed by it
    ways: tuple[_Way, ...]
    keys: frozenset[str]
    # The same ways for the compiled `live`, when it is built (see `compiled`).
    table: _Table | None = None

    @property
    def words(self) -> frozenset[str]:
        """Every word `live` may look for in a text's word set."""
        out = set(self.keys)
        for way in self.ways:
            out |= way.singles
            out.update(*way.any_of, *(ws for ws, _ in way.mixed))
        return frozenset(out)

    @classmethod
    def of(cls, patterns: list[list[str]]) -> _Ways:
        owners = tuple((i, j) for i, alts in enumerate(patterns) for j in range(len(alts)))
        index: dict[str, list[int]] = {}
        ways: list[_Way] = []
        for alt, (i, j) in enumerate(owners):
            for needs in _needs(patterns[i][j]):
                key = min(needs, key=_rarity, default=None)
                if key is None or _rarity(key)[0] == math.inf:
                    raise ValueError(f"no word is needed to match {patterns[i][j]!r}")
                rest = [_check(n) for n in sorted(needs - {key}, key=_rarity)]
                for word in key:
                    index.setdefault(word, []).append(len(ways))
                ways.append(
                    _Way(
                        alt,
                        frozenset(w for ws, subs in rest if len(ws) == 1 and not subs for w in ws),
                        tuple(ws for ws, subs in rest if len(ws) > 1 and not subs),
                        tuple((ws, subs) for ws, subs in rest if subs),
                    )
                )
        by_word = {w: tuple(ids) for w, ids in index.items()}
        return cls(owners, by_word, tuple(ways), frozenset(index), _table(ways, by_word, owners))

    def live(
        self, present: AbstractSet[str], words: AbstractSet[str], low: str
    ) -> dict[int, list[int]]:
        """pattern -> its alternatives that can match (in order), given the
        text's words and the subset `present` of them that are keys."""
        table = self.table
        if table is not None and isinstance(words, _SETS) and isinstance(present, _SETS):
            alts = table.live(present, words, low)
        else:
            alts = self._py_live(present, words, low)
        owners = self.owners
        by_pattern: dict[int, list[int]] = {}
        for alt in alts:
            i, j = owners[alt]
            by_pattern.setdefault(i, []).append(j)
        return by_pattern

    def bind(self, vocabulary: object) -> None:
        """Let the compiled `live` read the words of the texts ``vocabulary``
        scans from the scan's own bits, when both are compiled.

        ``vocabulary`` must list every word of these ways that can occur in
        ASCII text. A lookup per needed word in the text's word set, through
        each word's str, is most of what `live` costs in a served request: those
        objects are rarely in cache, the bits nearly always are.
        """
        if self.table is not None and hasattr(vocabulary, "listed_bits"):
            self.table.bind(vocabulary)

    def _py_live(self, present: AbstractSet[str], words: AbstractSet[str], low: str) -> list[int]:
        """The alternatives, in order, that have a way whose needs all occur."""
        ways, index = self.ways, self.index
        candidates: set[int] = set()
        for word in present:
            candidates.update(index[word])
        live: set[int] = set()
        # Set operations in C per way, rather than a Python loop per need:
        # this runs on every text that holds a key word.
        isdisjoint = words.isdisjoint
        for way in candidates:
            alt, singles, any_of, mixed = ways[way]
            if alt in live or not singles <= words or any(map(isdisjoint, any_of)):
                continue
            if mixed and not all(
                not isdisjoint(ws) or any(map(low.__contains__, subs)) for ws, subs in mixed
            ):
                continue
            live.add(alt)
        return sorted(live)


_SETS: Final = (set, frozenset)


class _Table(Protocol):
    def live(
        self, present: AbstractSet[str], words: AbstractSet[str], low: str, /
    ) -> list[int]: ...

    def bind(self, vocabulary: object, /) -> None: ...


_Compiled = tuple[
    int,
    tuple[str, ...],
    tuple[tuple[str, ...], ...],
    tuple[tuple[tuple[str, ...], tuple[str, ...]], ...],
]


def _often(word: str) -> tuple[float, str]:
    return _PERCENT_OF_TEXTS.get(word, 0.3), word


def compiled_ways(ways: Sequence[_Way]) -> tuple[_Compiled, ...]:
    """The ways as the compiled table takes them: every collection a tuple.

    The table stops at a way's first need that fails, so the needs go in the
    order that finds it soonest (this decides speed only, never what holds):
    the words that must all occur rarest first, each group's words commonest
    first, and the groups least likely to hold first.
    """
    return tuple(
        (
            w.alt,
            tuple(sorted(w.singles, key=_often)),
            tuple(
                tuple(sorted(ws, key=_often, reverse=True))
                for ws in sorted(w.any_of, key=lambda ws: (_rarity(ws), sorted(ws)))
            ),
            tuple((tuple(ws), subs) for ws, subs in w.mixed),
        )
        for w in ways
    )


def _table(
    ways: Sequence[_Way], index: dict[str, tuple[int, ...]], owners: tuple[tuple[int, int], ...]
) -> _Table | None:
    """The compiled `_Ways.live` over these ways, if it is built (see `compiled`)."""
    module = compiled.load("gateway.guard.detectors.injection._ways")
    if module is None:
        return None
    table: _Table = module.WayTable(compiled_ways(ways), index, len(owners))
    return table
