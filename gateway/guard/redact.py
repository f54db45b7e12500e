"""Secrets out of model output: every value the deterministic floor finds becomes a marker.

Sans-IO. `redact` rewrites a whole text; `StreamRedactor` does the same for a
text that arrives in pieces (the text deltas of a streamed answer) and passes
each piece on as soon as nothing after it can still make it part of a secret.

What is replaced, and by what:

* every span `secrets.scan` reports becomes ``[REDACTED:<kind>]``; spans that
  overlap or touch become one marker, named after the longest finding in it;
* a value the floor only finds once a wrapping is undone (base64, hex,
  escapes, look-alike or invisible characters: see `unwrap`) is not a
  substring of the text. Where the decoded value does occur literally (only
  its name was wrapped), every occurrence is replaced (key material that
  `unwrap` reports as the first line of a base64 block takes the rest of the
  block with it). Otherwise the wrapping
  is located among the whitespace- and quote-delimited runs of the text that
  `unwrap` could decode (those holding non-ASCII, ``%``, ``&``, ``\\``,
  ``0x`` or a base64/hex run): binary searches find the fewest runs whose
  replacement leaves neither a finding nor a piece of the value, in the text
  or in what it decodes to, and the stretch from the first to the last of
  them is replaced, with the encoded runs right next to it (the ends of a
  hex list or base64 block too short to decode on their own). When no set of
  runs does, the same search runs over whole lines, so a secret that cannot
  be pinned to a run takes its line with it rather than get through. Each
  search costs about 2*log2(runs) floor calls per wrapped value;
* the text is then judged again, markers included, until the floor finds
  nothing (at most `MAX_ROUNDS` rounds).

Failing closed: when the floor raises (`unwrap.UnwrapLimit` for a text wrapped
beyond its bounds, or anything else), or a text still holds findings after
`MAX_ROUNDS`, the text that could not be checked is replaced by
``[REDACTED:unchecked]``: for `redact` the whole text, for the stream the part
it was about to pass on.
"""

from __future__ import annotations

import bisect
import re

from gateway.guard.detectors import secrets, unwrap
from gateway.guard.detectors.secrets.private_keys import PEM_END_RE, PEM_HEAD_RE
from gateway.guard.findings import Finding

__all__ = [
    "MAX_ROUNDS",
    "MIN_WINDOW",
    "PEM_BOUND",
    "UNCHECKED",
    "StreamRedactor",
    "marker",
    "redact",
]

UNCHECKED = "unchecked"  # the kind named for text the floor could not judge
MAX_ROUNDS = 8
# The longest a private key (or any other secret still growing at the end of
# what has arrived) is held back before it is passed on redacted: more than
# the largest PEM key (an RSA-8192 key is about 6.4 KB).
PEM_BOUND = 16 * 1024
# A PEM header is up to 73 characters; a window shorter than one could pass a
# header on before it is complete.
MIN_WINDOW = 80

_Span = tuple[int, int, str, int]  # start, end, kind, length of the longest finding merged in it
_Found = list[tuple[str, str]]

# The runs a wrapping is looked for in. An escaped token ends at whitespace
# and a quoted string at its quote; a wrapping over several runs (a base64
# block over lines, a hex list) is found as the stretch from first to last.
_UNIT_RE = re.compile(r"[^\s\"'`]+")
_LINE_RE = re.compile(r"[^\n]+")
# Runs `unwrap` could decode: its gates (non-ASCII for normalisation, the
# escape literals, base64 and hex runs of 16 or more characters).
_WRAPPED_RE = re.compile(r"[^\x00-\x7f]|[%&\\]|0x|[A-Za-z0-9+/_-]{16}")
_PEM_END_MAX = 80  # characters an END line can take, so a search can span two deltas
# Lines of key material after a key cut at `PEM_BOUND`: base64 with the quotes,
# commas and escaped line breaks of a key pasted into code.
_KEY_BODY_RE = re.compile(r"[A-Za-z0-9+/=\r\n\t\\\"',]*")
_WHITESPACE_RE = re.compile(r"\s")
# Lines of base64 (the last one possibly short: still arriving) up to the end.
_KEY_LINES_RE = re.compile(r"(?:\s*+[A-Za-z0-9+/]{16,}+={0,2}+)*+\s*+[A-Za-z0-9+/=]*+")
_SHORT_B64_RE = re.compile(r"[A-Za-z0-9+/]{2,15}={0,2}")
_GAP = 8  # whitespace and quotes between two runs of one wrapping (a line break and indent)


class _Unresolved(Exception):
    """The floor still reports something after every round: the text is not let through."""


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact(text: str) -> str:
    """``text`` with every secret the floor finds replaced by ``[REDACTED:<kind>]``.

    Text the floor finds nothing in is returned unchanged (the same object).
    When the floor cannot judge the text (it raises, or findings remain after
    `MAX_ROUNDS`), the result is ``[REDACTED:unchecked]``: a text that was not
    checked is not passed on.
    """
    try:
        spans = _spans(text)
    except Exception:
        return marker(UNCHECKED) if text else text
    return _Rendered(text, spans).text if spans else text


# ---------------------------------------------------------------------------
# Finding the spans
# ---------------------------------------------------------------------------


class _Rendered:
    """A text with spans replaced by markers, and the way back to the text's offsets."""

    __slots__ = ("_pieces", "_starts", "text")

    def __init__(self, source: str, spans: list[_Span]) -> None:
        out: list[str] = []
        # (offset here, start in source, end in source, is a marker)
        pieces: list[tuple[int, int, int, bool]] = []
        pos = at = 0
        for start, end, kind, _ in spans:
            if start > pos:
                pieces.append((at, pos, start, False))
                out.append(source[pos:start])
                at += start - pos
            mark = marker(kind)
            pieces.append((at, start, end, True))
            out.append(mark)
            at += len(mark)
            pos = end
        if pos < len(source) or not pieces:
            pieces.append((at, pos, len(source), False))
            out.append(source[pos:])
        self.text = "".join(out)
        self._pieces = pieces
        self._starts = [p[0] for p in pieces]

    def source_span(self, start: int, end: int, kind: str) -> _Span:
        """The source offsets of ``[start, end)`` here; a marker touched is taken whole."""
        at, s, e, is_marker = self._pieces[bisect.bisect_right(self._starts, start) - 1]
        lo = s if is_marker else s + start - at
        at, s, e, is_marker = self._pieces[bisect.bisect_right(self._starts, end - 1) - 1]
        hi = e if is_marker else s + end - at
        return lo, hi, kind, hi - lo


def _merge(spans: list[_Span]) -> list[_Span]:
    """Overlapping or touching spans as one, named after the longest finding among them."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[_Span] = []
    for span in spans:
        if merged and span[0] <= merged[-1][1]:
            start, end, kind, longest = merged[-1]
            if span[3] > longest:
                kind, longest = span[2], span[3]
            merged[-1] = (start, max(end, span[1]), kind, longest)
        else:
            merged.append(span)
    return merged


def _spans(text: str) -> list[_Span]:
    """The merged spans of ``text`` to replace. Raises when the floor cannot judge it."""
    spans: list[_Span] = []
    rendered: _Rendered | None = None  # none until there is something to replace
    for _ in range(MAX_ROUNDS):
        current = text if rendered is None else rendered.text
        findings = secrets.scan(current)
        if findings:
            new = [(f.start, f.end, f.kind) for f in findings]
        else:
            found = _find(current, findings)
            if not found:
                return spans
            new = _literal(current, found) or _wrapped(current, found)
        if rendered is not None:
            spans += [rendered.source_span(s, e, k) for s, e, k in new]
        else:
            spans = [(s, e, k, e - s) for s, e, k in new]
        spans = _merge(spans)
        rendered = _Rendered(text, spans)
    raise _Unresolved("findings remain after every round")


def _find(text: str, findings: list[Finding] | None = None) -> _Found:
    """`floor.find`, reusing a scan of ``text`` already made."""
    if findings is None:
        return unwrap.find(text, secrets.scan)

    def scan(view: str) -> list[Finding]:
        # unwrap.find scans the text itself first: that is the scan just made.
        return findings if view is text else secrets.scan(view)

    return unwrap.find(text, scan)


def _literal(text: str, found: _Found) -> list[tuple[int, int, str]]:
    """Every occurrence of a found value that the text spells out.

    A value is spelled out when only its name was wrapped (``&#112;assword=``),
    or when `unwrap` reports key material as the part of a base64 block that
    has the shape of a key (its first line): that takes the rest of its block.
    """
    out: list[tuple[int, int, str]] = []
    runs: _Runs | None = None
    for kind, value in found:
        if not value:
            continue
        at = text.find(value)
        while at >= 0:
            span = (at, at + len(value), kind)
            if kind == "private_key":
                runs = runs or _Runs(text)
                span = runs.widen(span)
            out.append(span)
            at = text.find(value, at + len(value))
    return out


def _wrapped(text: str, found: _Found) -> list[tuple[int, int, str]]:
    """Where the values found only in a wrapping are: runs that decode, else whole lines."""
    runs = _Runs(text)
    located = _cover(text, runs.wrapped, found)
    if located is not None:
        return [runs.widen(span) for span in located]
    located = _cover(text, [m.span() for m in _LINE_RE.finditer(text)], found)
    if located is None:
        raise _Unresolved("a wrapped value is in no line of the text")
    return located


class _Runs:
    """The whitespace- and quote-delimited runs of a text, and those `unwrap` could decode."""

    __slots__ = ("_encoded", "_runs", "_starts", "_text", "wrapped")

    def __init__(self, text: str) -> None:
        self._text = text
        self._runs = [m.span() for m in _UNIT_RE.finditer(text)]
        self._starts = [s for s, _ in self._runs]
        flags = [_WRAPPED_RE.search(text, s, e) is not None for s, e in self._runs]
        self.wrapped = [run for run, w in zip(self._runs, flags, strict=True) if w]
        # Non-ASCII runs are not taken along by `widen`: in prose written in
        # another script every word is one.
        self._encoded = [
            w and text[s:e].isascii() for (s, e), w in zip(self._runs, flags, strict=True)
        ]

    def widen(self, span: tuple[int, int, str]) -> tuple[int, int, str]:
        """``span`` and the encoded runs next to it: the rest of its hex list or base64 block.

        The pieces left at either end of a wrapping may be too short for
        `unwrap` to decode (a hex list needs 8 bytes, a base64 run 16
        characters) and so hold a few characters of the secret that no check
        sees.
        """
        start, end, kind = span
        runs, encoded = self._runs, self._encoded
        first = bisect.bisect_right(self._starts, start) - 1
        last = bisect.bisect_right(self._starts, end - 1) - 1
        if first < 0 or not (encoded[first] and encoded[last]):
            return span
        while first > 0 and encoded[first - 1] and runs[first][0] - runs[first - 1][1] <= _GAP:
            first -= 1
        while (
            last + 1 < len(runs) and encoded[last + 1] and runs[last + 1][0] - runs[last][1] <= _GAP
        ):
            last += 1
        if last + 1 < len(runs) and runs[last + 1][0] - runs[last][1] <= _GAP:
            # The last line of a base64 block, too short to count as a run.
            tail = self._text[runs[last + 1][0] : runs[last + 1][1]]
            if _SHORT_B64_RE.fullmatch(tail) and not (tail.islower() or tail.istitle()):
                last += 1
        return min(start, runs[first][0]), max(end, runs[last][1]), kind


def _cover(
    text: str, units: list[tuple[int, int]], found: _Found
) -> list[tuple[int, int, str]] | None:
    """Stretches of ``units`` whose replacement leaves nothing of the values; None if none do.

    "Nothing" is stricter than the floor finding nothing: the rest of a hex
    list or of a wrapped base64 block decodes to the rest of the secret,
    which the floor may no longer recognise (its prefix is gone), so no piece
    of a value may be left in the text or in what it decodes to either.

    One stretch per step, the last first: the shortest prefix of the units
    that leaves nothing ends with the last wrapping, and the shortest stretch
    ending there that takes a value away whole, and exposes no new one,
    starts with its first unit. A step takes about 2*log2(units) floor calls.
    """
    kinds = {value: kind for kind, value in found}
    removed: list[tuple[int, int, str]] = []

    def left(extra: list[tuple[int, int]]) -> tuple[set[str], list[str]]:
        ranges = removed + [(s, e, UNCHECKED) for s, e in extra]
        probe = _Rendered(text, _merge([(s, e, k, e - s) for s, e, k in ranges])).text
        walk = unwrap.walk(probe, secrets.scan)
        return {value for _, value in walk.found}, [probe, *(view.text for view in walk.views)]

    def clear(extra: list[tuple[int, int]], values: set[str]) -> bool:
        rest, texts = left(extra)
        return not rest and not _residue(values, texts)

    current = set(kinds)
    if not units or not clear(units, current):
        return None
    while current:
        lo, hi = 0, len(units)  # units[:lo] leave something, units[:hi] nothing
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if not clear(units[:mid], current) else (lo, mid)
        last = hi
        lo, hi = 0, last  # units[lo:last] take a value away whole, units[hi:last] do not
        after: set[str] = set()
        while hi - lo > 1:
            mid = (lo + hi) // 2
            rest, texts = left(units[mid:last])
            if rest < current and not _residue(current - rest, texts):
                lo, after = mid, rest
            else:
                hi = mid
        if lo == 0:
            after = left(units[:last])[0]
        gone = current - after
        if not gone:
            return None  # the floor is not monotone here: let the caller try coarser units
        kind = next((kinds[v] for v in kinds if v in gone), UNCHECKED)
        removed.append((units[lo][0], units[last - 1][1], kind))
        current = after
    return removed


_PIECE = 8  # characters of a value that count as a piece of it left behind


def _residue(values: set[str], texts: list[str]) -> bool:
    """Whether a piece of one of ``values`` is still in one of ``texts``."""
    for value in values:
        # Pieces every half piece apart: any leftover of 1.5 pieces holds one whole.
        starts = range(0, max(1, len(value) - _PIECE + 1), _PIECE // 2)
        pieces = {value[i : i + _PIECE] for i in starts} | {value[-_PIECE:]}
        if any(piece in t for piece in pieces for t in texts):
            return True
    return False


# ---------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------


def _open_key(text: str, start: int) -> int | None:
    """Where a private key header at or after ``start`` has no END line after it yet."""
    at = text.find("-----BEGIN", start)
    while at >= 0:
        head = PEM_HEAD_RE.match(text, at)
        if head is None:
            at = text.find("-----BEGIN", at + 1)
            continue
        nxt = text.find("-----BEGIN", head.end())
        if PEM_END_RE.search(text, head.end(), len(text) if nxt < 0 else nxt) is None:
            return at
        at = nxt
    return None


def _may_grow(text: str, end: int, kind: str) -> bool:
    """Whether a finding ending at ``end`` may go on as ``text`` does.

    So it may when nothing but more of its token follows; key material also
    when only base64 lines follow (an unarmoured key arrives line by line).
    """
    if _WHITESPACE_RE.search(text, end) is None:
        return True
    lines = _KEY_LINES_RE.match(text, end) if kind == "private_key" else None
    return lines is not None and lines.end() == len(text)


class StreamRedactor:
    """`redact` for a text that arrives in pieces, passing each piece on when it is safe to.

    ``feed`` takes the next piece of the text and returns what may be sent
    now, already redacted; ``flush`` ends the text and returns the rest.

    Holdback: the last ``window`` characters received are held back, so a
    secret of at most ``window`` characters (as it appears in the text,
    wrapping included) is always whole in the held text before any of it is
    passed on, however the text was split. Clean text is therefore delayed by
    at most ``window`` characters. Each scan also reads up to ``window``
    characters already passed on (from the start of a token), so that a
    value whose name went out earlier (``password=``) is still recognised;
    only the held part is ever changed. The text is never cut inside a
    finding: a finding is passed on whole as its marker, or, when nothing but
    more of the same token follows it (it may still grow), held from its start
    (up to `PEM_BOUND` characters). While a private key header with no END
    line yet is in the held part, everything from the header on is held, with
    no scan, until the END line arrives or `PEM_BOUND` characters are held;
    then it is passed on as ``[REDACTED:private_key]``, and the lines of key
    material that follow it, and its END line, are dropped.

    Relation to `redact`: the concatenation of everything returned equals
    ``redact(whole)`` when every secret in the text is at most ``window``
    characters long (a PEM key up to `PEM_BOUND`) and the floor recognises it
    with the ``window`` characters before it (the tests check this for every
    kind they sample, under any split). Otherwise the stream differs: it may
    redact where the whole text was not (a finding that started in text
    already passed on is redacted from there on), a marker may come out in
    two, and what the floor only recognises from a cue further back than the
    window (the ``kind: Secret`` line of a long Kubernetes manifest), or only
    from a stretch longer than the window whose start it does not recognise
    as a secret already, is not caught.
    When the floor cannot judge the held text, what was due to be passed on
    is replaced by ``[REDACTED:unchecked]``.

    Cost: each ``feed`` that has something to pass on runs the floor once on
    the context and held text (about two windows); a feed while the held text
    is shorter than the window, or while a key is held, does not scan.
    """

    __slots__ = (
        "_context",
        "_held",
        "_in_key",
        "_key_at",
        "_key_body",
        "_key_tail",
        "_parts",
        "_tail",
        "_tail_marker",
        "_window",
    )

    def __init__(self, window: int = 256) -> None:
        if window < MIN_WINDOW:
            raise ValueError(f"the window must be at least {MIN_WINDOW} characters")
        self._window = window
        self._reset()

    def _reset(self) -> None:
        self._context = ""  # the last characters passed on, as received: the scan's context
        self._parts: list[str] = []  # received, not yet passed on
        self._held = 0  # their length
        # Characters at the end of the context that the marker the output ends
        # with stands for (0: the output ends with text as received).
        self._tail_marker = 0
        self._in_key = False  # an unclosed private key is held: wait for its END line
        self._key_at = 0  # where its header is in the held text
        self._tail = ""  # the last characters searched for that END line
        self._key_body = False  # a key was cut at the bound: drop its remaining lines
        self._key_tail = ""  # what may be the start of that key's END line

    @property
    def held(self) -> int:
        """Characters received and not yet passed on."""
        return self._held

    def feed(self, text: str) -> str:
        """The next piece of the text; returns what may be sent now, redacted."""
        if self._key_body:
            text = self._skip_key_body(text)
        if not text:
            return ""
        self._parts.append(text)
        self._held += len(text)
        if self._in_key:
            probe = self._tail + text
            if PEM_END_RE.search(probe) is None and self._held - self._key_at <= PEM_BOUND:
                self._tail = probe[-_PEM_END_MAX:]
                return ""
            self._in_key = False
        elif self._held <= self._window:
            return ""  # nothing is due yet: no scan
        return self._emit(final=False)

    def flush(self) -> str:
        """End of the text: the rest, redacted. The redactor is then ready for a new text."""
        if self._key_tail:
            self._parts.append(self._key_tail)
            self._held += len(self._key_tail)
        out = self._emit(final=True) if self._held else ""
        self._reset()
        return out

    def _emit(self, *, final: bool) -> str:
        context = self._context
        buf = context + "".join(self._parts)
        start, end = len(context), len(buf)
        cut = end
        key_at: int | None = None
        forced: _Span | None = None
        if not final:
            key_at = _open_key(buf, start)
            if key_at is not None and end - key_at > PEM_BOUND:
                forced, key_at = (key_at, end, "private_key", end - key_at), None
                # Whatever the floor says, the key's remaining lines are dropped.
                self._key_body = True
            elif key_at is not None:
                cut = key_at
            else:
                cut = max(start, end - self._window)
        try:
            spans = _spans(buf)
        except Exception:
            spans = [(start, cut, UNCHECKED, cut - start)]
        else:
            if forced is not None:
                spans = _merge([*spans, forced])
            elif not final:
                cut = self._safe_cut(buf, start, cut, spans, key_at)
        if key_at is not None and cut <= key_at:
            self._in_key = True
            self._key_at = key_at - cut
            self._tail = buf[max(key_at, end - _PEM_END_MAX) :]
        return self._pass_on(buf, start, cut, spans)

    def _safe_cut(
        self, buf: str, start: int, cut: int, spans: list[_Span], limit: int | None
    ) -> int:
        """``cut`` moved out of any finding across it: before it if it may grow, else after it."""
        end = len(buf)
        for a, b, kind, _ in spans:
            if a < cut < b:
                growing = _may_grow(buf, b, kind)
                if (growing or (limit is not None and b > limit)) and end - max(a, start) <= (
                    PEM_BOUND
                ):
                    return max(a, start)
                return b
            if a >= cut:
                break
        return cut

    def _pass_on(self, buf: str, start: int, cut: int, spans: list[_Span]) -> str:
        """Pass on ``buf[start:cut]`` with its spans replaced; keep the rest held."""
        out: list[str] = []
        pos = start
        tail = self._tail_marker
        for a, b, kind, _ in spans:
            if b <= start:
                continue
            if a >= cut:
                break
            s, e = max(a, start), min(b, cut)
            if s > pos:
                out.append(buf[pos:s])
                tail = 0
            if tail and s == pos:
                # Contiguous with the marker the output ends with: the same
                # secret, or one a whole-text redaction merges into it.
                tail += e - s
            else:
                out.append(marker(kind))
                tail = e - s
            pos = e
        if cut > pos:
            out.append(buf[pos:cut])
            tail = 0
        sent = buf[:cut]
        context = sent[-self._window :]
        if len(sent) > self._window:
            # Start the context at a token boundary: a token cut in half can
            # read as a different secret, or as one where there is none.
            space = _WHITESPACE_RE.search(context)
            if space is not None:
                context = context[space.end() :]
        self._context = context
        self._tail_marker = min(tail, len(context))
        rest = buf[cut:]
        self._parts = [rest] if rest else []
        self._held = len(rest)
        return "".join(out)

    def _skip_key_body(self, text: str) -> str:
        """What of ``text`` follows the key material and END line of a key cut at the bound."""
        text = self._key_tail + text
        self._key_tail = ""
        match = _KEY_BODY_RE.match(text)
        pos = match.end() if match is not None else 0
        if pos == len(text):
            return ""
        footer = PEM_END_RE.match(text, pos)
        if footer is not None:
            self._key_body = False
            return text[footer.end() :]
        rest = text[pos:]
        if rest.startswith("-") and len(rest) < _PEM_END_MAX and "\n" not in rest:
            self._key_tail = rest  # may be the start of the END line
            return ""
        self._key_body = False
        return rest
