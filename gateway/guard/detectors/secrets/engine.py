"""The scan: every pass over one text, and how the places where they could match are found.

Every request waits on this scan, so speed is part of correctness. The rules
are grouped into passes, each anchored on one character where its matches
start, with a pattern whose groups its handler reads:

  ``_`` ``-`` ``.``   the separator after a known token prefix (``ghp_``,
                      ``sk-``, ``ya29.``...; ``rules.yaml``, read by ``tokens``),
                      checked by fixed-width lookbehinds; the dash pass also
                      finds ``--password`` style flags
  one per character   the keyword formats of ``rules.yaml`` (``AKIA``, ``dapi``,
                      ``GR1348941``, ``IDENTIFIED BY``...), each keyword anchored
                      on the character that costs the prefilter least (``glued``)
  ``J`` ``B``         JWTs (``eyJ``) and PEM private keys (``-----BEGIN``)
  ``~`` ``|``         Azure client secrets, OpenShift and Facebook app tokens
  ``:`` ``=``         credentials in URLs, Slack, Discord and Teams webhooks,
                      Telegram bot tokens,
                      Azure SAS signatures and random values under plain names
  ``k`` ``c`` ``p`` ``u`` ``g``, either case: the key-name keywords
                      (``token``/``key``, ``secret``/``cred``, ``pass``/``pw``,
                      ``auth``, ``login``) in code, config, env files, XML, HTTP
                      headers, CLI flags and plain sentences ("my password is
                      ..."), and ``curl -u`` command lines

Finding where a pass could match is the expensive part, and clean text must
cost as little as possible. ASCII text, with the compiled prefilter built,
takes one literal-led search per anchor character, each started where the
prefilter says it can first match and most not run at all (see
``_candidates``). Otherwise short texts take one search with all passes as
alternatives, longer ones the searches per anchor character, each from its
anchor's first occurrence (see ``_PREFILTER`` and ``_TEXT_SEARCHES`` for
why). Each search tests a probe in C that turns away nearly every anchor.
Python only runs where a probe matched, where the pass's own pattern is run
for its groups, on a small window.

What must not be denied is left alone on purpose (a deny here cannot be
overridden): hashes and commit ids, UUIDs on their own, public keys and
certificates, paths, URLs without credentials, references such as ``$VAR`` or
``os.environ[...]``, code expressions, and placeholders.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, AnyStr, Final, Protocol

from gateway import compiled
from gateway.guard.detectors.secrets.assignments import (
    _KW_C,
    _KW_G,
    _KW_K,
    _KW_P,
    _KW_U,
    _on_keyword,
)
from gateway.guard.detectors.secrets.common import _A, _PRIO_SPECIFIC, _Ctx
from gateway.guard.detectors.secrets.curl import _CURL, _on_curl
from gateway.guard.detectors.secrets.formats import (
    _PIPE_RE,
    _TILDE_RE,
    _on_pipe,
    _on_tilde,
)
from gateway.guard.detectors.secrets.glued import KEYWORDS_AT, on_keyword_token, probe
from gateway.guard.detectors.secrets.jwt import _JWT_PASS_RE, _on_jwt
from gateway.guard.detectors.secrets.prefix import ASCII, alternatives
from gateway.guard.detectors.secrets.private_keys import _BEGIN_RE, _on_begin
from gateway.guard.detectors.secrets.tokens import (
    _DASH_PROBE,
    _DASH_RE,
    _DOT_PROBE,
    _DOT_RE,
    _UNDER_PROBE,
    _UNDER_RE,
    _on_dash,
    _on_dot,
    _on_prefix,
)
from gateway.guard.detectors.secrets.urls import (
    _COLON_PROBE,
    _COLON_RE,
    _EQ_PROBE,
    _EQ_RE,
    _on_colon,
    _on_eq,
)
from gateway.guard.findings import Finding

# ---------------------------------------------------------------------------
# Scan
# ---------------------------------------------------------------------------

_Handler = Callable[[_Ctx, re.Match[str]], None]


@dataclass(frozen=True, slots=True)
class _Pass:
    """One rule family: the characters its matches start with, its pattern, its handler."""

    anchors: str
    rx: re.Pattern[str]
    handler: _Handler
    # What the prefilter tests after the anchor: succeeds wherever ``rx`` would.
    probe: str
    # The same for an ASCII-lowercased copy, for passes anchored on a letter.
    low_probe: str | None


def _pass(
    anchors: str, rest: str, handler: _Handler, probe: str | None = None, low: str | None = None
) -> _Pass:
    head = re.escape(anchors) if len(anchors) == 1 else "[" + anchors + "]"
    rx = re.compile(head + rest, _A)
    return _Pass(anchors, rx, handler, _ungrouped(rest) if probe is None else probe, low)


def _text_pass(
    rx: re.Pattern[str], handler: _Handler, probe: str | None = None, low: str | None = None
) -> _Pass:
    """A pass from a pattern that starts with its one anchor character."""
    src = rx.pattern
    n = 2 if src.startswith("\\") else 1
    if re.escape(src[n - 1]) != src[:n] and src[:n] != src[n - 1]:
        raise ValueError(f"pattern does not start with a literal: {src[:20]!r}")
    return _pass(src[n - 1], src[n:], handler, probe, low)


def _word_pass(rule: tuple[str, str], handler: _Handler) -> _Pass:
    """A case-insensitive pass from a lowercase head and the rest of its pattern.

    The head is letters and group syntax only, so spelling each letter as a
    two-case class is exact; ``low_probe`` is the rule as written, for the
    lowercased copy.
    """
    head, rest = rule
    if re.fullmatch(r"[a-z][a-z()?:<=|]*", head) is None:
        raise ValueError(f"keyword head must be lowercase letters and groups: {head!r}")
    cased = re.sub("[a-z]", lambda m: f"[{m[0]}{m[0].upper()}]", head[1:])
    return _pass(head[0] + head[0].upper(), cased + rest, handler, low=head[1:] + rest)


def _ungrouped(src: str) -> str:
    """``src`` with capturing groups made non-capturing (the prefilter needs none)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(src):
        c = src[i]
        if c == "\\":
            out.append(src[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            # "]" right after "[" or "[^" is a member, not the end of the class.
            j = i + 1 + (src.startswith("^", i + 1))
            if src.startswith("]", j):
                out.append(src[i : j + 1])
                i = j + 1
                continue
        elif c == "(" and not src.startswith("?", i + 1):
            c = "(?:"
        out.append(c)
        i += 1
    return "".join(out)


# In the order the passes used to run one after another: when two findings have
# the same span and priority, the earlier pass's kind is reported, as before.
# This and the other names that hold patterns are not Final:
# tests/guard/test_linear.py swaps counting patterns in through the module,
# and compiled code reads a Final name from a C static instead.
_PASSES: tuple[_Pass, ...] = (
    _text_pass(_UNDER_RE, _on_prefix, _UNDER_PROBE),
    _text_pass(_DASH_RE, _on_dash, _DASH_PROBE),
    _text_pass(_DOT_RE, _on_dot, _DOT_PROBE),
    # Token formats whose keyword runs into the body (rules.yaml, "keywords").
    *(_pass(a, probe(a), on_keyword_token, low=probe(a, lower=True)) for a in KEYWORDS_AT),
    _text_pass(_JWT_PASS_RE, _on_jwt),
    _text_pass(_BEGIN_RE, _on_begin),
    _text_pass(_TILDE_RE, _on_tilde),
    _text_pass(_PIPE_RE, _on_pipe),
    _text_pass(_COLON_RE, _on_colon, _COLON_PROBE),
    _text_pass(_EQ_RE, _on_eq, _EQ_PROBE),
    _word_pass(_KW_K, _on_keyword),
    _word_pass(_KW_C, _on_keyword),
    _word_pass(_KW_P, _on_keyword),
    _word_pass(_KW_U, _on_keyword),
    _word_pass(_KW_G, _on_keyword),
    _word_pass(_CURL, _on_curl),
)


def _probe(passes: tuple[int, ...]) -> str:
    return "|".join(_PASSES[i].probe for i in passes)


def _anchor_table() -> dict[str, tuple[int, ...]]:
    by_anchor: dict[str, list[int]] = {}
    for i, p in enumerate(_PASSES):
        for anchor in p.anchors:
            by_anchor.setdefault(anchor, []).append(i)
    return {k: tuple(v) for k, v in by_anchor.items()}


# The passes anchored on each character. A hit is handed to all of them: each
# runs its own pattern there, so the probes need only be supersets.
_BY_ANCHOR: Final = _anchor_table()

# Short texts: one pattern. Each alternative is one anchor character and the
# probes of its passes; every alternative starts with a plain literal, so re
# scans for the set of anchor characters in C and enters a branch only there.
# Probes may consume text: the scan restarts one character after each hit.
_PREFILTER = re.compile(
    "|".join(f"{re.escape(a)}(?:{_probe(passes)})" for a, passes in _BY_ANCHOR.items()), _A
)

# Longer texts: one pattern per anchor character instead. re looks for a set
# of characters at about 6.5 ns per character however small the set, but for
# one leading literal at about 0.4 ns, and an anchor found that way skips the
# other alternatives' tests; above several hundred characters that outweighs
# the fixed cost of a dozen calls (1.6x faster on 4 KB of prose, 1.3x on the
# 1 MB benchmark text; characters absent from the text cost one memchr).
# Passes anchored on letters are looked for in an ASCII-lowercased copy, one
# search per letter for both cases, with their lowercase probes (``low_probe``).
_LOWERED: Final = "kcpug"


def _lower_search(letter: str) -> tuple[bytes, re.Pattern[bytes], tuple[int, ...]]:
    passes = tuple(i for i, p in enumerate(_PASSES) if letter in p.anchors.lower())
    probes: list[str] = []
    for i in passes:
        low = _PASSES[i].low_probe
        if low is None:
            raise ValueError(f"pass {i} is anchored on {letter!r} but has no lowercase probe")
        probes.append(_ungrouped(low))
    return letter.encode(), re.compile(f"{letter}(?:{'|'.join(probes)})".encode()), passes


_TEXT_SEARCHES: tuple[tuple[str, re.Pattern[str], tuple[int, ...]], ...] = tuple(
    (a, re.compile(f"{re.escape(a)}(?:{_probe(passes)})", _A), passes)
    for a, passes in _BY_ANCHOR.items()
    if a.lower() not in _LOWERED
)
_LOWER_SEARCHES = tuple(_lower_search(letter) for letter in _LOWERED)
# Text length from which the searches per anchor beat the single pattern
# (without the prefilter, which makes them cheaper at any length): the
# crossover measured on prose, logs, code and agent conversations lies between
# about 500 and 1000 characters.
_SPLIT_AT = 768


def _candidates(text: str) -> dict[int, list[int]]:
    """For each pass, in increasing order, the positions where its probe matches."""
    found: dict[int, list[int]] = {}
    places = None if _PLACES is None else _PLACES.places(text)
    if places is None and len(text) < _SPLIT_AT:
        search = _PREFILTER.search
        m = search(text)
        while m is not None:
            pos = m.start()
            for i in _BY_ANCHOR[text[pos]]:
                found.setdefault(i, []).append(pos)
            m = search(text, pos + 1)
        return found
    # Each pass is looked for by exactly one of these searches. Each starts at
    # the first place it can match: re's own scan for a leading literal reads
    # about ten times slower than a memchr for the anchor, and nothing can
    # match before it. For ASCII text the prefilter (`_PLACES`) finds the
    # places where each search can match in one pass, past anchors where
    # none of its ways holds (a separator with no known prefix before it,
    # say): most searches are not run at all, and the others are matched at
    # their few places rather than searched for through the rest of the text.
    if places is None:
        # Most searches find nothing, so the first one is made inline.
        for anchor, rx, passes in _TEXT_SEARCHES:
            first = text.find(anchor)
            if first >= 0 and (m := rx.search(text, first)) is not None:
                found.update(dict.fromkeys(passes, _starts(rx, text, m)))
        # Non-ASCII becomes "?", so the copy keeps the offsets of ``text``.
        low = text.encode("ascii", "replace").lower()
        for letter, lrx, passes in _LOWER_SEARCHES:
            first = low.find(letter)
            if first >= 0 and (lm := lrx.search(low, first)) is not None:
                found.update(dict.fromkeys(passes, _starts(lrx, low, lm)))
        return found
    # By index rather than zip: zip's strict= is parsed as a keyword on every call.
    for i, (_, rx, passes) in enumerate(_TEXT_SEARCHES):
        at = places[i]
        if at is not None and (starts := _matched(rx, text, at)):
            found.update(dict.fromkeys(passes, starts))
    low = b""
    for j, (_, lrx, passes) in enumerate(_LOWER_SEARCHES, len(_TEXT_SEARCHES)):
        at = places[j]
        if at is not None:
            low = low or _LOWER(text)
            if lower_starts := _matched(lrx, low, at):
                found.update(dict.fromkeys(passes, lower_starts))
    return found


def _matched(rx: re.Pattern[AnyStr], subject: AnyStr, places: list[int]) -> list[int]:
    """Where ``rx`` matches, from the prefilter's places for it.

    A match can start only at one of them; a search with more places than the
    prefilter keeps is searched for from the first.
    """
    if len(places) > _PLACES_KEPT:
        return _starts(rx, subject, rx.search(subject, places[0]))
    match = rx.match
    return [p for p in places if match(subject, p) is not None]


# How far the prefilter reads around each anchor: the longest known prefix
# before a separator, and the 32 characters of a generic high-entropy value
# after "=" or ":".
_BACK: Final = 16
_WIDTH: Final = 34


class _Places(Protocol):
    def places(self, text: str, /) -> list[list[int] | None] | None: ...


@dataclass(frozen=True)
class PrefilterTables:
    """The compiled prefilter's tables (see `_anchors.c`), built from `prefix.alternatives`.

    ``ways[i]`` are search i's ways with each set as a map over the text's
    bytes (a lowercased search's maps take each byte by its lowercase).
    """

    ways: tuple[tuple[dict[int, bytes], ...], ...]
    anchored: bytes
    searches: array[int]
    bucket_ways: array[int]
    way_start: array[int]
    checks: array[int]
    maps: bytes


@cache
def _byte_map(chars: frozenset[int], lowered: bool) -> bytes:
    """Which bytes of the text may stand where ``chars`` may (ways repeat their sets)."""
    return bytes(
        1 if c < 0x80 and (ord(chr(c).lower()) if lowered else c) in chars else 0
        for c in range(256)
    )


def _index_offset(ways: list[dict[int, bytes]]) -> int:
    """The offset whose byte narrows the ways to try the most (the anchor's excepted)."""
    offsets = sorted({at for way in ways for at in way if at != 0})

    def tried(at: int) -> int:
        return sum(sum(way[at]) if at in way else 256 for way in ways)

    return min(offsets, key=lambda at: (tried(at), abs(at)), default=-1)


def prefilter_tables() -> PrefilterTables:
    """Every search's ways (`prefix.alternatives`) laid out for `_anchors.Prefilter`.

    A search's row is its index offset and the starts of 257 buckets of way
    numbers: bucket b holds the ways that allow byte b there (a way that says
    nothing there is in every bucket), and bucket 256, for an index offset
    off the text, holds them all. A way's checks are (offset, map) pairs.
    """
    searches: list[tuple[re.Pattern[Any], bool]] = [(rx, False) for _, rx, _ in _TEXT_SEARCHES]
    searches += [(lrx, True) for _, lrx, _ in _LOWER_SEARCHES]
    anchored = array("I", bytes(4 * 256))
    maps: dict[bytes, int] = {}
    rows, bucket_ways, way_start, checks = array("i"), array("i"), array("i", [0]), array("i")
    all_ways: list[tuple[dict[int, bytes], ...]] = []
    for i, (rx, lowered) in enumerate(searches):
        ways = [
            {at: _byte_map(chars, lowered) for at, chars in way.items()}
            for way in alternatives(rx, _BACK, _WIDTH)
        ]
        all_ways.append(tuple(ways))
        for way in ways:
            first = way.get(0, _byte_map(ASCII, lowered))
            for c in range(256):
                anchored[c] |= first[c] << i
        index = _index_offset(ways)
        numbers = []
        for way in ways:
            numbers.append(len(way_start) - 1)
            # The anchor is known, the index byte chosen the bucket; the
            # narrowest maps go first, since most tests fail.
            tests = sorted(
                ((at, m) for at, m in way.items() if at not in (0, index)), key=lambda t: sum(t[1])
            )
            for at, m in tests:
                checks.extend((at, maps.setdefault(m, len(maps))))
            way_start.append(len(checks) // 2)
        rows.append(index)
        for b in range(257):
            rows.append(len(bucket_ways))
            bucket_ways.extend(
                n
                for n, way in zip(numbers, ways, strict=True)
                if b == 256 or index not in way or way[index][b]
            )
        rows.append(len(bucket_ways))
    return PrefilterTables(
        tuple(all_ways), anchored.tobytes(), rows, bucket_ways, way_start, checks, b"".join(maps)
    )


def _prefilter() -> _Places | None:
    module = compiled.load("gateway.guard.detectors.secrets._anchors")
    if module is None:
        return None
    t = prefilter_tables()
    prefilter: _Places = module.Prefilter(
        t.anchored, t.searches, t.bucket_ways, t.way_start, t.checks, t.maps
    )
    return prefilter


# Not Final: tests set it to None to compare the scan without the prefilter,
# and the compiled module reads a Final name from a C static they cannot reach.
_PLACES: _Places | None = _prefilter()


def _places_kept() -> int:
    module = compiled.load("gateway.guard.detectors.secrets._anchors")
    kept: int = 0 if module is None else module.PLACES_KEPT
    return kept


# How many places `_PLACES` hands a search before it stops counting them
# (not Final, for the same reason as `_PLACES`: tests/guard/test_linear.py).
_PLACES_KEPT: int = _places_kept()


def _python_lower(text: str) -> bytes:
    return text.encode("ascii").lower()


def _ascii_lowering() -> Callable[[str], bytes]:
    # The lowercase searches' subject for ASCII text, in one pass in C when
    # the prefilter's module is built (it is whenever `_PLACES` is set).
    module = compiled.load("gateway.guard.detectors.secrets._anchors")
    lower: Callable[[str], bytes] = _python_lower if module is None else module.lower
    return lower


_LOWER: Final = _ascii_lowering()


def _starts(rx: re.Pattern[AnyStr], subject: AnyStr, m: re.Match[AnyStr] | None) -> list[int]:
    """The start of ``m`` and of every later match of `rx`, overlapping ones included."""
    positions = []
    search = rx.search
    while m is not None:
        pos = m.start()
        positions.append(pos)
        m = search(subject, pos + 1)
    return positions


def _resolve(hits: list[tuple[int, int, str, int]]) -> list[Finding]:
    # A hit inside one at least as specific (same value seen by a vendor rule and
    # by the generic assignment rule) is reported once; partial overlaps are all
    # kept, since redaction needs their union.
    hits.sort(key=lambda h: (h[0], -h[1], -h[3]))
    reach = [-1] * (_PRIO_SPECIFIC + 1)  # furthest end kept so far, per priority
    kept: list[tuple[int, int, str, int]] = []
    for h in hits:
        if max(reach[h[3] :]) >= h[1]:
            continue  # every kept hit starts at or before h, so this one contains it
        reach[h[3]] = max(reach[h[3]], h[1])
        kept.append(h)
    return [Finding(kind, s, e) for s, e, kind, _ in kept]


def scan(text: str) -> list[Finding]:
    """Findings for every concrete secret in ``text``, in order of position."""
    if len(text) < 8:
        return []
    found = _candidates(text)
    if not found:
        return []
    ctx = _Ctx(text, [], set())
    # Pass by pass, each handler sees what a finditer of its own pattern would
    # return: its matches in order, none overlapping the one before.
    for i in sorted(found):
        match, handler = _PASSES[i].rx.match, _PASSES[i].handler
        ctx.value_end = last_end = -1
        for pos in found[i]:
            if pos >= last_end:
                m = match(text, pos)
                if m is not None:
                    last_end = m.end()
                    handler(ctx, m)
    return _resolve(ctx.hits) if ctx.hits else []
