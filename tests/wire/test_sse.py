"""The incremental SSE parser: spec behaviour and independence from how bytes are chunked."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from openai._streaming import SSEDecoder as OpenAISSEDecoder

from gateway.wire.sse import SSEDecoder, SSEEvent, SSEFramer, encode_event

# Every line ending, a BOM, comments, multi-byte UTF-8, ids, retries, an empty
# data line, a block with no data, an unknown field and an unterminated tail.
STREAM = (
    "\ufeffevent: message_start\r\n"
    'data: {"type":"message_start"}\r\n'
    "\r\n"
    ": keep-alive ping\n"
    "\n"
    "id: 7\n"
    "data: héllo 世界 🎉\n"
    "data:  two spaces\n"
    "data\n"
    "\n"
    "retry: 2500\r"
    "event: delta\r"
    "data: cr only\r"
    "\r"
    "retry: 12x\n"
    "id: with\0nul\n"
    "unknown: field\n"
    "event: no-data\n"
    "\n"
    "id\n"
    "data: last id cleared\n"
    "\r\n"
    "data: unterminated tail"
).encode()

EXPECTED = [
    ("message_start", '{"type":"message_start"}', None, None, True),
    (None, "", None, None, False),
    (None, "héllo 世界 🎉\n two spaces\n", "7", None, True),
    ("delta", "cr only", "7", 2500, True),
    ("no-data", "", "7", None, False),
    (None, "last id cleared", "", None, True),
    (None, "unterminated tail", "", None, False),
]


Fields = tuple[str | None, str, str | None, int | None, bool]


def _fields(events: Iterable[SSEEvent]) -> list[Fields]:
    return [(e.event, e.data, e.id, e.retry, e.dispatch) for e in events]


def _decode(chunks: Iterable[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.flush())
    return events


def test_whole_stream() -> None:
    events = _decode([STREAM])
    assert _fields(events) == EXPECTED
    assert b"".join(e.raw for e in events) == STREAM
    assert events[0].raw.startswith(b"\xef\xbb\xbfevent: message_start\r\n")
    assert events[1].raw == b": keep-alive ping\n\n"


def test_every_split_point_gives_the_same_events() -> None:
    whole = _decode([STREAM])
    for cut in range(len(STREAM) + 1):
        events = _decode([STREAM[:cut], STREAM[cut:]])
        assert _fields(events) == _fields(whole), cut
        assert b"".join(e.raw for e in events) == STREAM, cut


def test_every_pair_of_split_points_gives_the_same_events() -> None:
    stream = STREAM[:120]
    whole = _fields(_decode([stream]))
    for first in range(len(stream) + 1):
        for second in range(first, len(stream) + 1):
            chunks = [stream[:first], stream[first:second], stream[second:]]
            assert _fields(_decode(chunks)) == whole, (first, second)


def test_byte_at_a_time() -> None:
    events = _decode(STREAM[i : i + 1] for i in range(len(STREAM)))
    assert _fields(events) == EXPECTED
    assert b"".join(e.raw for e in events) == STREAM


def test_events_are_returned_as_soon_as_their_blank_line_arrives() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    [event] = decoder.feed(b"\n")
    assert (event.data, event.raw) == ("a", b"data: a\n\n")
    # A lone CR ends the block at once; its LF, if it follows, starts the next raw.
    [event] = decoder.feed(b"data: b\r\r")
    assert event.data == "b"
    assert decoder.feed(b"\n") == []
    [event] = decoder.feed(b"data: c\n\n")
    assert (event.data, event.raw) == ("c", b"\ndata: c\n\n")
    assert decoder.flush() == []


def test_crlf_split_between_cr_and_lf_is_one_line_ending() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\ndata: y\r") == []
    [event] = decoder.feed(b"\n\r\n")
    assert event.data == "x\ny"


def test_multibyte_character_split_across_chunks() -> None:
    encoded = "data: 🎉\n\n".encode()
    for cut in range(len(encoded) + 1):
        [event] = _decode([encoded[:cut], encoded[cut:]])
        assert event.data == "🎉"


def test_invalid_utf8_is_replaced() -> None:
    [event] = _decode([b"data: \xff\xfe ok\n\n"])
    assert event.data == "\ufffd\ufffd ok"


def test_bom_only_at_stream_start() -> None:
    [first, second] = _decode([b"\xef\xbb\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n"])
    assert first.data == "a"
    # A later BOM is part of the field name, so the line is an unknown field.
    assert (second.dispatch, second.data) == (False, "")
    # BOM then LF is a blank line: an empty block, not a dispatched event.
    [empty, event] = _decode([b"\xef\xbb\xbf\ndata: x\n\n"])
    assert (empty.raw, empty.dispatch) == (b"\xef\xbb\xbf\n", False)
    assert (event.data, event.dispatch) == ("x", True)


def test_spec_examples() -> None:
    # https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
    assert [e.data for e in _decode([b"data: YHOO\ndata: +2\ndata: 10\n\n"])] == ["YHOO\n+2\n10"]
    events = _decode(
        [
            b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
            b"data:  third event\n\n"
        ]
    )
    dispatched = [(e.data, e.id) for e in events if e.dispatch]
    assert dispatched == [("first event", "1"), ("second event", ""), (" third event", "")]
    events = _decode([b"data\n\ndata\ndata\n\ndata:"])
    assert [(e.data, e.dispatch) for e in events] == [("", True), ("\n", True), ("", False)]
    events = _decode([b"data:test\n\ndata: test\n\n"])
    assert [e.data for e in events] == ["test", "test"]


def test_retry_must_be_ascii_digits() -> None:
    stream = "retry: 100\ndata: a\n\nretry: ١٢\ndata: b\n\nretry:\ndata: c\n\n"
    events = _decode([stream.encode()])
    assert [e.retry for e in events] == [100, None, None]


def test_id_persists_until_changed() -> None:
    events = _decode([b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n"])
    assert [e.id for e in events] == ["1", "1", "2"]


def test_flush_resets_for_a_new_stream() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"id: 9\ndata: partial")
    [tail] = decoder.flush()
    assert (tail.data, tail.id, tail.dispatch) == ("partial", "9", False)
    [event] = decoder.feed(b"\xef\xbb\xbfdata: fresh\n\n")
    assert (event.data, event.id) == ("fresh", None)


def test_empty_feeds_and_flushes() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.flush() == []
    assert decoder.feed(b"\n\n") != []


def test_large_line_in_small_chunks() -> None:
    payload = b"x" * 1_000_000
    stream = b"data: " + payload + b"\n\n"
    events = _decode(stream[i : i + 4096] for i in range(0, len(stream), 4096))
    [event] = events
    assert event.data == payload.decode()
    assert event.raw == stream


def _random_stream(rng: random.Random) -> bytes:
    pieces: list[str] = []
    for _ in range(rng.randint(1, 8)):
        if rng.random() < 0.3:
            pieces.append(f"event: e{rng.randint(0, 9)}")
        if rng.random() < 0.2:
            pieces.append(f"id: {rng.randint(0, 99)}")
        if rng.random() < 0.2:
            pieces.append(": comment")
        for _ in range(rng.randint(1, 3)):
            text = "".join(rng.choice("ab c:é世🎉 ") for _ in range(rng.randint(0, 12)))
            pieces.append(f"data:{text}")
        pieces.append("")
    newline = rng.choice(["\n", "\r", "\r\n"])
    return (newline.join(pieces) + newline).encode()


def test_matches_the_openai_sdk_decoder_on_random_streams() -> None:
    rng = random.Random(1234)
    for _ in range(300):
        stream = _random_stream(rng)
        cut = rng.randint(0, len(stream))
        ours = [
            (e.event, e.data, e.id) for e in _decode([stream[:cut], stream[cut:]]) if e.dispatch
        ]
        theirs = [
            (e.event, e.data, e.id)
            for e in OpenAISSEDecoder().iter_bytes(iter([stream[:cut], stream[cut:]]))
        ]
        assert ours == theirs, stream


@pytest.mark.parametrize(
    ("event", "data"),
    [
        (None, "plain"),
        ("message_delta", '{"type":"message_delta"}'),
        ("x", "two\nlines"),
        ("x", "crlf\r\nand\rcr"),
        (None, ""),
        (None, " leading space"),
        ("ünïcode", "🎉"),
        (None, "\n"),
    ],
)
def test_encode_round_trip(event: str | None, data: str) -> None:
    encoded = encode_event(event, data)
    [decoded] = _decode([encoded])
    expected = data.replace("\r\n", "\n").replace("\r", "\n")
    assert (decoded.event, decoded.data, decoded.dispatch) == (event, expected, True)
    assert decoded.raw == encoded


def test_encode_exact_bytes() -> None:
    assert encode_event("error", "a\nb") == b"event: error\ndata: a\ndata: b\n\n"
    assert encode_event(None, "x") == b"data: x\n\n"


@pytest.mark.parametrize("event", ["bad\nname", "bad\rname"])
def test_encode_refuses_line_breaks_in_event_names(event: str) -> None:
    with pytest.raises(ValueError, match="line break"):
        encode_event(event, "x")


# -- the relay's framer: whole blocks out, byte for byte --

LF_STREAM = b"".join(
    [
        b'data: {"choices":[{"delta":{"content":"hel"}}]}\n\n',
        b": keep-alive\n\n",
        b"event: content_block_delta\n",
        b'data: {"type":"content_block_delta","delta":{"text":"lo \xe4\xb8\x96"}}\n\n',
        b"\n",
        b"data: a\ndata: b\n\n",
        b"data: [DONE]\n\n",
        b"data: unterminated",
    ]
)


def _frame(chunks: Iterable[bytes]) -> list[bytes]:
    framer = SSEFramer()
    out = [framer.feed(chunk) for chunk in chunks]
    out.append(framer.flush())
    return out


def _at_block_boundaries(stream: bytes, pieces: list[bytes]) -> None:
    forwarded = b""
    for piece in pieces[:-1]:
        forwarded += piece
        # A decoder fed everything forwarded so far has no partial block left.
        decoder = SSEDecoder()
        decoder.feed(forwarded)
        assert decoder.flush() == [], forwarded
    assert forwarded + pieces[-1] == stream


@pytest.mark.parametrize("stream", [LF_STREAM, STREAM], ids=["lf", "cr-crlf-lf"])
def test_the_framer_forwards_every_byte_and_cuts_only_between_blocks(stream: bytes) -> None:
    rng = random.Random(7)
    _at_block_boundaries(stream, _frame([stream]))
    _at_block_boundaries(stream, _frame(stream[i : i + 1] for i in range(len(stream))))
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(1, 12)))
        chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        _at_block_boundaries(stream, _frame(chunks))


def test_the_framer_forwards_a_block_as_soon_as_its_blank_line_arrives() -> None:
    framer = SSEFramer()
    assert framer.feed(b"data: one\n") == b""
    assert framer.feed(b"\ndata: tw") == b"data: one\n\n"
    assert framer.feed(b"o\n\n") == b"data: two\n\n"
    assert framer.feed(b"data: three\n\n") == b"data: three\n\n"
    assert framer.flush() == b""


def test_the_framer_reads_cr_line_ends_once_it_meets_them() -> None:
    framer = SSEFramer()
    assert framer.feed(b"data: one\n\ndata: t") == b"data: one\n\n"
    assert framer.feed(b"wo\r\n\r\ndata: x\r") == b"data: two\r\n\r\n"
    assert framer.feed(b"\r") == b"data: x\r\r"
    assert framer.flush() == b""


def test_a_large_block_in_many_pieces_is_searched_once() -> None:
    # Quadratic rescanning would show as time; the framer's own position says it.
    framer = SSEFramer()
    for _ in range(10_000):
        assert framer.feed(b"x" * 100) == b""
    assert framer._searched == 10_000 * 100 - 1
    assert framer.feed(b"\n\n") == b"x" * 1_000_000 + b"\n\n"


def test_framer_sets_the_first_block_apart_only_at_an_lf_blank_line() -> None:
    framer = SSEFramer()
    whole = framer.feed(b"data: a\n\ndata: b\n\ndata: c\n\n")
    assert framer.first_block_apart(whole) == (b"data: a\n\n", b"data: b\n\ndata: c\n\n")
    single = framer.feed(b": keep-alive\n\n")
    assert framer.first_block_apart(single) == (single,)
    cr = SSEFramer()
    blocks = cr.feed(b"data: a\r\rdata: b\n\ndata: c\r\r")
    assert blocks == b"data: a\r\rdata: b\n\ndata: c\r\r"
    assert cr.first_block_apart(blocks) == (blocks,)
