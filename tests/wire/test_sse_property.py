"""Generated event streams: split at any byte, they decode and frame as they do whole.

Each stream is built from blocks of field lines (event names, data lines that
may be empty, ids, retries, comments, unknown fields, names without a colon)
with CRLF, CR or LF line ends and multi-byte UTF-8 values, optionally behind a
BOM and followed by an unterminated tail. The fields each block must decode to
are worked out from how it was built, not by parsing it again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.wire.sse import SSEDecoder, SSEEvent, SSEFramer

Fields = tuple[str | None, str, str | None, int | None, bool]
Line = tuple[str, str | None]  # (field name, or ":" for a comment; value, None for a bare name)

SETTINGS = settings(max_examples=100, database=None, derandomize=True, deadline=None)

# Values: no line breaks; the characters that matter to a parser (colon,
# space, NUL, digits) and multi-byte UTF-8 of two, three and four bytes.
_VALUE_CHARS = st.one_of(
    st.sampled_from(list("ab :\0 9éß世界🎉\ufeff")),
    st.characters(codec="utf-8", blacklist_characters="\r\n"),
)
VALUES = st.text(_VALUE_CHARS, max_size=12)
RETRIES = st.one_of(st.integers(0, 10**6).map(str), VALUES)

LINES: st.SearchStrategy[Line] = st.one_of(
    st.tuples(st.just("data"), st.one_of(VALUES, st.none())),
    st.tuples(st.just("data"), st.just("")),
    st.tuples(st.just("event"), st.one_of(VALUES, st.none())),
    st.tuples(st.just("id"), st.one_of(VALUES, st.none())),
    st.tuples(st.just("retry"), RETRIES),
    st.tuples(st.just(":"), VALUES),
    st.tuples(st.just("unknown"), VALUES),
)


@dataclass(frozen=True)
class Stream:
    data: bytes
    expected: list[Fields]
    lf_only: bool


@st.composite
def streams(draw: st.DrawFn, *, lf_only: bool = False) -> Stream:
    ends = ["\n"] if lf_only else ["\n", "\r", "\r\n"]
    blocks = draw(st.lists(st.lists(LINES, max_size=5), max_size=6))
    tail = draw(st.lists(LINES, max_size=3))
    out: list[str] = ["\ufeff"] if draw(st.booleans()) else []
    previous_end = ""

    def line(text: str, *, last: bool = False) -> None:
        nonlocal previous_end
        choices = ends
        if not text and previous_end == "\r":
            # An empty line ended by LF right after a CR would read as one CRLF.
            choices = [e for e in ends if e != "\n"]
        end = "" if last and draw(st.booleans()) else draw(st.sampled_from(choices))
        out.append(text + end)
        previous_end = end

    expected: list[Fields] = []
    last_id: list[str | None] = [None]

    def block(lines: list[Line], *, complete: bool) -> None:
        event: str | None = None
        data: list[str] = []
        retry: int | None = None
        for i, (name, value) in enumerate(lines):
            space = draw(st.sampled_from(["", " "]))
            if name == ":":
                line(":" + space + (value or ""), last=not complete and i == len(lines) - 1)
                continue
            if value is None:
                text, decoded = name, ""
            else:
                text = f"{name}:{space}{value}"
                # The spec drops one space after the colon, only one.
                decoded = value if space else value.removeprefix(" ")
            line(text, last=not complete and i == len(lines) - 1)
            if name == "data":
                data.append(decoded)
            elif name == "event":
                event = decoded
            elif name == "id" and "\0" not in decoded:
                last_id[0] = decoded
            elif name == "retry" and decoded.isascii() and decoded.isdigit():
                retry = int(decoded)
        if complete:
            line("")
        if complete or lines:
            expected.append(
                (event or None, "\n".join(data), last_id[0], retry, complete and bool(data))
            )

    for lines in blocks:
        block(lines, complete=True)
    block(tail, complete=False)
    data = "".join(out).encode("utf-8")
    if not blocks and not tail and out:
        # A BOM alone is an unterminated tail of its own.
        expected.append((None, "", None, None, False))
    return Stream(data, expected, lf_only)


@st.composite
def split(draw: st.DrawFn, stream: Stream) -> list[bytes]:
    """``stream`` cut at any byte positions, empty pieces included."""
    n = len(stream.data)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=24)))
    bounds = [0, *cuts, n]
    return [stream.data[a:b] for a, b in itertools.pairwise(bounds)]


def decode(chunks: Iterable[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.flush())
    return events


def fields(events: Iterable[SSEEvent]) -> list[Fields]:
    return [(e.event, e.data, e.id, e.retry, e.dispatch) for e in events]


@st.composite
def split_streams(draw: st.DrawFn, *, lf_only: bool = False) -> tuple[Stream, list[bytes]]:
    stream = draw(streams(lf_only=lf_only))
    return stream, draw(split(stream))


@given(streams())
@SETTINGS
def test_a_whole_stream_decodes_to_the_fields_it_was_built_from(stream: Stream) -> None:
    events = decode([stream.data])
    assert fields(events) == stream.expected
    assert b"".join(e.raw for e in events) == stream.data


@given(split_streams())
@SETTINGS
def test_any_split_decodes_to_the_same_events_as_the_whole(
    case: tuple[Stream, list[bytes]],
) -> None:
    stream, chunks = case
    whole = decode([stream.data])
    events = decode(chunks)
    assert fields(events) == fields(whole)
    assert b"".join(e.raw for e in events) == stream.data
    # Each block's raw is the whole stream's, but for the LF of a CRLF that
    # arrived after its CR had ended the block: that LF opens the next raw.
    ends = block_ends(stream.data)
    offset = 0
    for event in events[: len(SSEDecoder().feed(stream.data))]:
        offset += len(event.raw)
        assert offset in ends


def block_ends(data: bytes) -> set[int]:
    """Where a block of ``data`` ends, as read whole or with a CRLF split after its CR.

    The unterminated tail is not a block: the framer never forwards it before the end.
    """
    ends = {0}
    offset = 0
    for event in SSEDecoder().feed(data):
        offset += len(event.raw)
        ends.add(offset)
        if data[offset - 2 : offset] == b"\r\n":
            ends.add(offset - 1)
    return ends


@given(st.one_of(split_streams(), split_streams(lf_only=True)))
@SETTINGS
def test_the_framer_forwards_every_byte_and_cuts_only_at_event_boundaries(
    case: tuple[Stream, list[bytes]],
) -> None:
    stream, chunks = case
    boundaries = block_ends(stream.data)
    framer = SSEFramer()
    forwarded = 0
    out: list[bytes] = []
    for chunk in chunks:
        piece = framer.feed(chunk)
        out.append(piece)
        forwarded += len(piece)
        assert forwarded in boundaries, (forwarded, sorted(boundaries))
    out.append(framer.flush())
    assert b"".join(out) == stream.data
    # After a flush the framer starts afresh: the same stream frames the same way.
    again = b"".join(framer.feed(chunk) for chunk in chunks) + framer.flush()
    assert again == stream.data


@given(split_streams(lf_only=True))
@SETTINGS
def test_an_lf_stream_is_forwarded_up_to_its_last_blank_line(
    case: tuple[Stream, list[bytes]],
) -> None:
    # Nothing complete is kept back: after each piece, what is held has no blank line.
    stream, chunks = case
    framer = SSEFramer()
    received = forwarded = 0
    for chunk in chunks:
        received += len(chunk)
        forwarded += len(framer.feed(chunk))
        assert b"\n\n" not in stream.data[forwarded:received]
    assert forwarded + len(framer.flush()) == len(stream.data)
