"""A deterministic meter of the work a detector does on one text: steps, not seconds.

Wall time on a shared CI machine is noise; what makes an input hostile is that the
work per input character grows with the input. The meter counts, while a detector
runs on one text:

* every call of a compiled regex reachable from the detector modules' globals (also
  inside dicts, tuples, lists and dataclasses there), swapped for a counting proxy:

  - ``search``, ``finditer``, ``findall``: the characters between the start position
    and each match start, plus the match, plus what is left to ``endpos`` after the
    last match. A search tries each start position in turn; the patterns searched
    here are literal-led or bounded, so a failed start costs a bounded amount.
  - ``match`` and ``fullmatch``: how far the regex engine *could* have read from
    ``pos``: one more than the longest prefix of ``text[pos:endpos]`` that some match
    of the pattern could begin with. That is computed exactly with a second regex,
    the pattern's prefix closure (``prefix_closure``), in which lookaheads become
    text that may be read; lookbehinds are fixed-width, so a constant. A pattern
    with ``[ \\t]*`` costs the spaces that are there, not the rest of the text.
    For a pattern no wider than 64 characters, its width stands in (cheaper).

* the windows that ``str`` methods look at, with the text passed as ``Metered``, a
  ``str`` subclass whose find/rfind/index/count/startswith/endswith/``in``/slicing
  (and whole-string methods such as lower or encode) count the characters they
  read; strings and bytes derived from it that way are metered too;

* one step per Python function call and per C function call (``sys.setprofile``),
  so that a per-occurrence loop of cheap calls shows up even where it reads little.

Every count is a function of the text alone, so a test can compare the steps for a
text and for four copies of it.

What this does not see is backtracking: a regex that tries 2^k ways through k
copies of a piece reads no further than one that tries one. ``ambiguities``
looks for the repeats that allow that, in the patterns themselves.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import types
from collections.abc import Callable, Iterator
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any, SupportsIndex

_METER_FILE = __file__


class _Steps:
    steps: int = 0


_COUNT = _Steps()


def _add(n: int) -> None:
    _COUNT.steps += n + 1


# ---------------------------------------------------------------------------
# Regex: the prefix closure of a pattern
# ---------------------------------------------------------------------------

_FLAG_LETTERS = ((re.I, "i"), (re.M, "m"), (re.S, "s"), (re.A, "a"), (re.U, "u"), (re.L, "L"))
_AT = {
    sre.AT_BEGINNING: "^",
    sre.AT_BEGINNING_STRING: r"\A",
    sre.AT_END: "$",
    sre.AT_END_STRING: r"\Z",
    sre.AT_BOUNDARY: r"\b",
    sre.AT_NON_BOUNDARY: r"\B",
}
_CATEGORY = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
}
_SINGLE = (sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY)
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_Item = tuple[Any, Any]


def _chr(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _flags(add: int, remove: int) -> str:
    on = "".join(c for f, c in _FLAG_LETTERS if add & f)
    off = "".join(c for f, c in _FLAG_LETTERS if remove & f)
    return on + ("-" + off if off else "")


class _Writer:
    """Pattern text back from a parsed pattern (re has no unparser)."""

    def __init__(self, parsed: Any) -> None:
        self.groups: dict[int, list[_Item]] = {}
        self._collect(list(parsed))

    def _collect(self, items: list[_Item]) -> None:
        for op, av in items:
            if op is sre.SUBPATTERN:
                if av[0] is not None:
                    self.groups[av[0]] = list(av[3])
                self._collect(list(av[3]))
            elif op is sre.BRANCH:
                for sub in av[1]:
                    self._collect(list(sub))
            elif op in _REPEATS:
                self._collect(list(av[2]))
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                self._collect(list(av[1]))
            elif op is sre.ATOMIC_GROUP:
                self._collect(list(av))

    def full(self, items: list[_Item]) -> str:
        """The items as written, with groups made non-capturing."""
        return "".join(self._one(op, av) for op, av in items)

    def _one(self, op: Any, av: Any) -> str:
        if op is sre.LITERAL:
            return _chr(av)
        if op is sre.NOT_LITERAL:
            return f"[^{_chr(av)}]"
        if op is sre.ANY:
            return "."
        if op is sre.IN:
            parts = []
            for kind, value in av:
                if kind is sre.NEGATE:
                    parts.append("^")
                elif kind is sre.LITERAL:
                    parts.append(_chr(value))
                elif kind is sre.RANGE:
                    parts.append(f"{_chr(value[0])}-{_chr(value[1])}")
                elif kind is sre.CATEGORY:
                    parts.append(_CATEGORY[value])
                else:
                    raise NotImplementedError(kind)
            return "[" + "".join(parts) + "]"
        if op is sre.BRANCH:
            return "(?:" + "|".join(self.full(list(s)) for s in av[1]) + ")"
        if op is sre.SUBPATTERN:
            return f"(?{_flags(av[1], av[2])}:{self.full(list(av[3]))})"
        if op is sre.ATOMIC_GROUP:
            return f"(?>{self.full(list(av))})"
        if op in _REPEATS:
            lo, hi, body = av
            rep = f"{{{lo},}}" if hi is sre.MAXREPEAT else f"{{{lo},{hi}}}"
            lazy = {sre.MIN_REPEAT: "?", sre.POSSESSIVE_REPEAT: "+"}.get(op, "")
            return f"(?:{self.full(list(body))}){rep}{lazy}"
        if op is sre.AT:
            return _AT[av]
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            direction, body = av
            kind = (
                ("=" if op is sre.ASSERT else "!")
                if direction == 1
                else ("<=" if op is sre.ASSERT else "<!")
            )
            return f"(?{kind}{self.full(list(body))})"
        if op is sre.GROUPREF:
            # A back reference matches what its group did: the group's pattern is a superset.
            return f"(?:{self.full(self.groups[av])})"
        raise NotImplementedError(op)

    def prefixes(self, items: list[_Item]) -> str:
        """A pattern matching every prefix of every string the items can match, and
        the text that their lookaheads can read."""
        if not items:
            return ""
        (op, av), rest = items[0], items[1:]
        if op in (sre.AT,) or (op in (sre.ASSERT, sre.ASSERT_NOT) and av[0] == -1):
            return self.prefixes(rest)  # reads a character at most, or a fixed width behind
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            return f"(?:{self.prefixes(list(av[1]))}|{self.prefixes(rest)})"
        head = self._head_prefixes(op, av)
        if not rest:
            return head
        return f"(?:{self._full_unrestricted(op, av)}{self.prefixes(rest)}|{head})"

    def _full_unrestricted(self, op: Any, av: Any) -> str:
        # Possessive, lazy and atomic forms match a subset of what the plain form does.
        if op in _REPEATS:
            lo, hi, body = av
            rep = f"{{{lo},}}" if hi is sre.MAXREPEAT else f"{{{lo},{hi}}}"
            return f"(?:{self._plain(list(body))}){rep}"
        return self._plain([(op, av)])

    def _plain(self, items: list[_Item]) -> str:
        return "".join(self._plain_one(op, av) for op, av in items)

    def _plain_one(self, op: Any, av: Any) -> str:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            return ""  # dropped: a superset of the strings matched
        if op is sre.BRANCH:
            return "(?:" + "|".join(self._plain(list(s)) for s in av[1]) + ")"
        if op is sre.SUBPATTERN:
            return f"(?{_flags(av[1], av[2])}:{self._plain(list(av[3]))})"
        if op is sre.ATOMIC_GROUP:
            return f"(?:{self._plain(list(av))})"
        if op in _REPEATS:
            return self._full_unrestricted(op, av)
        if op is sre.GROUPREF:
            return f"(?:{self._plain(self.groups[av])})"
        return self._one(op, av)

    def _head_prefixes(self, op: Any, av: Any) -> str:
        if op in _SINGLE:
            return f"(?:{self._one(op, av)})?"
        if op is sre.BRANCH:
            return "(?:" + "|".join(self.prefixes(list(s)) for s in av[1]) + ")"
        if op is sre.SUBPATTERN:
            return f"(?{_flags(av[1], av[2])}:{self.prefixes(list(av[3]))})"
        if op is sre.ATOMIC_GROUP:
            return f"(?:{self.prefixes(list(av))})"
        if op is sre.GROUPREF:
            return f"(?:{self.prefixes(self.groups[av])})"
        if op in _REPEATS:
            _, hi, body = av
            body = list(body)
            if hi == 0:
                return ""
            if len(body) == 1 and body[0][0] in _SINGLE:
                rep = "*" if hi is sre.MAXREPEAT else f"{{0,{hi}}}"
                return f"(?:{self._one(*body[0])}){rep}"
            rep = "*" if hi is sre.MAXREPEAT else f"{{0,{hi - 1}}}"
            return f"(?:(?:{self._plain(body)}){rep}{self.prefixes(body)})"
        raise NotImplementedError(op)


def char_class(op: Any, av: Any) -> str:
    """Pattern text for one parsed character item (a literal, a class, any)."""
    return _Writer([])._one(op, av)


def prefix_closure(pattern: re.Pattern[Any]) -> re.Pattern[Any]:
    """A regex whose fullmatches are exactly the texts the engine may read while
    matching ``pattern`` from their start (lookbehinds and anchors aside)."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    writer = _Writer(parsed)
    src = writer.prefixes(list(parsed))
    flags = pattern.flags & ~re.X
    if isinstance(pattern.pattern, bytes):
        return re.compile(src.encode("latin-1"), flags)
    return re.compile(src, flags)


# ---------------------------------------------------------------------------
# Regex: repeats that can split the same text in two ways
# ---------------------------------------------------------------------------

# Characters the samples are drawn from.
_POOL = [chr(c) for c in range(32, 127)] + ["\n", "\t", "\u00e9", "\u200b"]
_MEMBERS: dict[tuple[str, int], list[str]] = {}


def _members(src: str, flags: int) -> list[str]:
    key = (src, flags)
    if key not in _MEMBERS:
        rx = re.compile(src, flags | re.S)
        _MEMBERS[key] = [c for c in _POOL if rx.fullmatch(c)]
    return _MEMBERS[key]


def _draw(writer: _Writer, items: list[_Item], flags: int, rnd: Any, out: list[str]) -> None:
    """Append a string that ``items`` may match (lookarounds aside)."""
    for op, av in items:
        if op in _SINGLE:
            chars = _members(writer._one(op, av), flags)
            if chars:
                out.append(rnd.choice(chars))
        elif op is sre.BRANCH:
            _draw(writer, list(rnd.choice(av[1])), flags, rnd, out)
        elif op is sre.SUBPATTERN:
            _draw(writer, list(av[3]), flags | av[1], rnd, out)
        elif op is sre.ATOMIC_GROUP:
            _draw(writer, list(av), flags, rnd, out)
        elif op in _REPEATS:
            lo, hi, body = av
            for _ in range(rnd.randint(lo, min(hi, lo + 2))):
                _draw(writer, list(body), flags, rnd, out)


def ambiguities(pattern: re.Pattern[Any], tries: int = 12) -> list[str]:
    """Where a backtracking engine can split one text in two ways, over and over.

    A repeat whose body matches some text two ways (two alternatives of a branch
    in it match the same sample), or in which one iteration matches what two
    iterations also match, gives 2^k ways to match k copies of that text, and a
    failing match tries them all. Possessive repeats and atomic groups commit.
    Samples are drawn from the parse tree and checked with the real engine, so
    the findings are real (what is not sampled is not found).
    """
    import random

    raw = pattern.pattern
    src = raw if isinstance(raw, str) else raw.decode("latin-1")
    # Drawn as text: a bytes pattern's flags without the ones only bytes allow.
    flags = pattern.flags & ~re.X & ~(re.U if isinstance(raw, bytes) else 0)
    writer = _Writer(sre_parse.parse(src, flags))
    rnd = random.Random(src)
    found: list[str] = []

    def samples(items: list[_Item], flags: int) -> set[str]:
        out: set[str] = set()
        for _ in range(tries):
            buf: list[str] = []
            _draw(writer, items, flags, rnd, buf)
            out.add("".join(buf))
        return out

    def walk(items: list[_Item], flags: int, repeated: bool) -> None:
        for op, av in items:
            if op is sre.SUBPATTERN:
                walk(list(av[3]), flags | av[1], repeated)
            elif op is sre.BRANCH:
                alts = [list(a) for a in av[1]]
                if repeated:
                    for i, a in enumerate(alts):
                        drawn = samples(a, flags)
                        for j, b in enumerate(alts):
                            other = re.compile(writer.full(b), flags) if i != j else None
                            hit = next((t for t in drawn if other and other.fullmatch(t)), None)
                            if hit is not None:
                                found.append(
                                    f"branch {writer.full(a)!r} / {writer.full(b)!r}: {hit!r}"
                                )
                for a in alts:
                    walk(a, flags, repeated)
            elif op in _REPEATS:
                _, hi, body = av
                body = list(body)
                many = op is not sre.POSSESSIVE_REPEAT and hi >= 2
                if many:
                    once = re.compile(writer.full(body), flags)
                    twice = re.compile(f"(?:{writer.full(body)}){{2}}", flags)
                    pieces = sorted(t for t in samples(body, flags) if t)
                    hit = next(
                        (
                            a + b
                            for a in pieces
                            for b in pieces
                            if once.fullmatch(a + b) and twice.fullmatch(a + b)
                        ),
                        None,
                    )
                    if hit is not None:
                        found.append(f"repeat {writer.full(body)!r}: {hit!r}")
                walk(body, flags, repeated or many)
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                walk(list(av[1]), flags, False)

    walk(list(sre_parse.parse(src, flags)), flags, False)
    return found


# ---------------------------------------------------------------------------
# Regex: the counting proxy
# ---------------------------------------------------------------------------


_NARROW = 64


def _bounds(subject: Any, pos: int, endpos: int | None) -> tuple[int, int]:
    n = len(subject)
    end = n if endpos is None or endpos >= n else max(0, endpos)
    return (pos if 0 <= pos <= n else max(0, min(pos, n))), end


class CountingPattern:
    """A compiled regex that counts the characters its calls can read."""

    def __init__(self, pattern: re.Pattern[Any]) -> None:
        self.original = pattern
        self.pattern = pattern.pattern
        self.flags = pattern.flags
        self.groups = pattern.groups
        self.groupindex = pattern.groupindex
        self._closure: re.Pattern[Any] | None = None
        width: int = sre_parse.parse(pattern.pattern, pattern.flags).getwidth()[1]
        # Up to this width, the pattern's width bounds its reach closely enough.
        self._width = width if width <= _NARROW else None

    def reach(self, subject: Any, pos: int, end: int) -> int:
        """How many characters from ``pos`` a match attempt there may read."""
        if self._width is not None:
            return max(0, min(end - pos, self._width + 1))
        if self._closure is None:
            self._closure = prefix_closure(self.original)
        closure = self._closure
        limit = end - pos
        first = closure.match(subject, pos, end)
        # Prefixes of viable text are viable, so viability is monotone in the
        # length: gallop, then bisect, from the length the greedy match found.
        good = first.end() - pos if first is not None else 0
        if good >= limit or closure.fullmatch(subject, pos, pos + good + 1) is None:
            return min(limit, good + 1)
        good += 1
        step = 1
        bad = limit + 1
        while good + step <= limit:
            if closure.fullmatch(subject, pos, pos + good + step) is None:
                bad = good + step
                break
            good += step
            step *= 2
        else:
            bad = limit + 1
        while bad - good > 1:
            mid = (good + bad) // 2
            if closure.fullmatch(subject, pos, pos + mid) is None:
                bad = mid
            else:
                good = mid
        return min(limit, good + 1)

    def match(self, subject: Any, pos: int = 0, endpos: int | None = None) -> Any:
        start, end = _bounds(subject, pos, endpos)
        _COUNT.steps += 1 + self.reach(subject, start, end)
        return self.original.match(subject, start, end)

    def fullmatch(self, subject: Any, pos: int = 0, endpos: int | None = None) -> Any:
        start, end = _bounds(subject, pos, endpos)
        _COUNT.steps += 1 + self.reach(subject, start, end)
        return self.original.fullmatch(subject, start, end)

    def search(self, subject: Any, pos: int = 0, endpos: int | None = None) -> Any:
        start, end = _bounds(subject, pos, endpos)
        m = self.original.search(subject, start, end)
        _COUNT.steps += 1 + max(0, end - start if m is None else m.end() - start)
        return m

    def finditer(self, subject: Any, pos: int = 0, endpos: int | None = None) -> Iterator[Any]:
        start, end = _bounds(subject, pos, endpos)
        last = start
        for m in self.original.finditer(subject, start, end):
            _add(m.end() - last)
            last = m.end()
            yield m
        _add(end - last)

    def findall(self, subject: Any, pos: int = 0, endpos: int | None = None) -> list[Any]:
        start, end = _bounds(subject, pos, endpos)
        _add(end - start)
        return self.original.findall(subject, start, end)

    def split(self, subject: Any, maxsplit: int = 0) -> list[Any]:
        _add(len(subject))
        return self.original.split(subject, maxsplit)

    def sub(self, repl: Any, subject: Any, count: int = 0) -> Any:
        _add(len(subject))
        return self.original.sub(repl, subject, count)


# ---------------------------------------------------------------------------
# Strings that count what is read of them
# ---------------------------------------------------------------------------


def _window(n: int, start: SupportsIndex | None, end: SupportsIndex | None) -> tuple[int, int]:
    lo, hi, _ = slice(start, end).indices(n)
    return lo, max(lo, hi)


def _wrap(value: Any) -> Any:
    if type(value) is str:
        return Metered(value)
    if type(value) is bytes:
        return MeteredBytes(value)
    return value


def _find_cost(found: int, lo: int, hi: int, width: int, backwards: bool) -> int:
    if found < 0:
        return hi - lo
    return (hi - found) if backwards else (found - lo + width)


class _Reads:
    __slots__ = ()

    """Counting versions of the methods of str and bytes that read a window."""

    def find(
        self, sub: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        lo, hi = _window(len(self), start, end)  # type: ignore[arg-type]
        found: int = super().find(sub, start, end)  # type: ignore[misc]
        _add(_find_cost(found, lo, hi, len(sub), False))
        return found

    def rfind(
        self, sub: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        lo, hi = _window(len(self), start, end)  # type: ignore[arg-type]
        found: int = super().rfind(sub, start, end)  # type: ignore[misc]
        _add(_find_cost(found, lo, hi, len(sub), True))
        return found

    def index(
        self, sub: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        found = self.find(sub, start, end)
        if found < 0:
            raise ValueError("substring not found")
        return found

    def rindex(
        self, sub: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        found = self.rfind(sub, start, end)
        if found < 0:
            raise ValueError("substring not found")
        return found

    def count(
        self, sub: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        lo, hi = _window(len(self), start, end)  # type: ignore[arg-type]
        _add(hi - lo)
        result: int = super().count(sub, start, end)  # type: ignore[misc]
        return result

    def startswith(
        self, prefix: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> bool:
        width = max(map(len, prefix)) if isinstance(prefix, tuple) else len(prefix)
        _add(width * (len(prefix) if isinstance(prefix, tuple) else 1))
        result: bool = super().startswith(prefix, start, end)  # type: ignore[misc]
        return result

    def endswith(
        self, suffix: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> bool:
        width = max(map(len, suffix)) if isinstance(suffix, tuple) else len(suffix)
        _add(width * (len(suffix) if isinstance(suffix, tuple) else 1))
        result: bool = super().endswith(suffix, start, end)  # type: ignore[misc]
        return result

    def __contains__(self, sub: Any) -> bool:
        found: int = super().find(sub)  # type: ignore[misc]
        _add(len(self) if found < 0 else found + len(sub))  # type: ignore[arg-type]
        return found >= 0

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)  # type: ignore[misc]
        if isinstance(key, slice):
            _add(len(value))
            return _wrap(value)
        _add(1)
        return value


def _whole(name: str) -> Callable[..., Any]:
    """A method that reads the whole string (lower, encode, split, isascii...)."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        _add(len(self))
        result = getattr(super(type(self), self), name)(*args, **kwargs)
        if isinstance(result, list):
            return result
        return _wrap(result)

    method.__name__ = name
    return method


_SHARED = ["lower", "upper", "translate", "replace", "strip", "lstrip", "rstrip", "split"]
_SHARED += ["rsplit", "splitlines", "partition", "rpartition", "isascii", "isalnum"]
_SHARED += ["isalpha", "isdigit", "isspace", "islower", "isupper"]
_WHOLE_STR = [*_SHARED, "casefold", "swapcase", "encode", "expandtabs", "istitle", "isprintable"]
_WHOLE_BYTES = [*_SHARED, "decode"]


class Metered(_Reads, str):
    """A str whose reads are counted."""

    __slots__ = ()


class MeteredBytes(_Reads, bytes):
    """Bytes whose reads are counted."""

    __slots__ = ()


for _name in _WHOLE_STR:
    setattr(Metered, _name, _whole(_name))
for _name in _WHOLE_BYTES:
    setattr(MeteredBytes, _name, _whole(_name))


# ---------------------------------------------------------------------------
# Swapping the proxies in
# ---------------------------------------------------------------------------


def _swapped(value: Any, proxies: dict[int, CountingPattern], seen: dict[int, Any]) -> Any:
    """``value`` with every compiled regex inside it replaced by its proxy."""
    key = id(value)
    if key in seen:
        return seen[key]
    out: Any = value
    if isinstance(value, re.Pattern):
        out = proxies.setdefault(key, CountingPattern(value))
    elif isinstance(value, dict):
        items = {k: _swapped(v, proxies, seen) for k, v in value.items()}
        if any(items[k] is not v for k, v in value.items()):
            out = type(value)(items)
    elif isinstance(value, (tuple, list)):
        parts = [_swapped(v, proxies, seen) for v in value]
        if any(p is not v for p, v in zip(parts, value, strict=True)):
            out = type(value)(parts) if not hasattr(value, "_fields") else type(value)(*parts)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: new
            for f in dataclasses.fields(value)
            if (new := _swapped(getattr(value, f.name), proxies, seen))
            is not getattr(value, f.name)
        }
        if changes:
            out = dataclasses.replace(value, **changes)
    seen[key] = out
    return out


class Meter:
    """Swaps the counting proxies into modules, for as long as it is entered.

    ``with Meter(secrets, injection) as meter: meter.steps_of(scan, text)``
    """

    def __init__(self, *modules: types.ModuleType, calls: bool = True) -> None:
        self.modules = modules
        self.calls = calls
        self._saved: list[tuple[types.ModuleType, str, Any]] = []
        self._proxies: dict[int, CountingPattern] = {}

    @property
    def patterns(self) -> list[CountingPattern]:
        return list(self._proxies.values())

    def __enter__(self) -> Meter:
        seen: dict[int, Any] = {}
        for module in self.modules:
            for name, value in list(vars(module).items()):
                if name.startswith("__") or isinstance(value, (types.ModuleType, type)):
                    continue
                new = _swapped(value, self._proxies, seen)
                if new is not value:
                    self._saved.append((module, name, value))
                    setattr(module, name, new)
        return self

    def __exit__(self, *exc: object) -> None:
        for module, name, value in reversed(self._saved):
            setattr(module, name, value)
        self._saved.clear()

    def steps_of(self, fn: Callable[[Metered], object], text: str) -> int:
        """The steps of ``fn(text)``."""
        _COUNT.steps = 0
        if self.calls:
            sys.setprofile(_on_event)
        try:
            fn(Metered(text))
        finally:
            if self.calls:
                sys.setprofile(None)
        return _COUNT.steps


def _on_event(frame: types.FrameType, event: str, arg: object) -> None:
    if event in ("call", "c_call") and frame.f_code.co_filename != _METER_FILE:
        _COUNT.steps += 1
