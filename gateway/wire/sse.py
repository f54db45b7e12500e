"""A sans-IO, incremental Server-Sent Events parser (WHATWG HTML, "event stream interpretation").

``SSEDecoder.feed`` takes bytes as they arrive, split anywhere (inside a UTF-8
sequence, between CR and LF), and returns one :class:`SSEEvent` per block ended
by a blank line. Every block is returned, including comment-only keep-alives
and blocks the spec does not dispatch (``dispatch`` is False), so that a relay
can forward each block's ``raw`` bytes as soon as it is complete: the ``raw`` of
all returned blocks concatenated is exactly the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_LINE_END: Final = re.compile(rb"\r\n?|\n")
_BOM: Final = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    # None when the block set no event type (the spec's default, "message").
    event: str | None
    data: str
    # The last event ID buffer at the end of the block; it persists across blocks.
    id: str | None
    # The block's valid `retry` field, if any.
    retry: int | None
    raw: bytes
    # Whether the spec dispatches this block: it had at least one data line and
    # was ended by a blank line (a stream's unterminated tail never is).
    dispatch: bool


class SSEDecoder:
    __slots__ = (
        "_at_start",
        "_data",
        "_event",
        "_last_id",
        "_pending",
        "_retry",
        "_skip_lf",
        "_tail",
    )

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # Bytes of the current block received in earlier feeds; the last
        # `_tail` of them are a line still waiting for its terminator.
        self._pending = bytearray()
        self._tail = 0
        # The previous feed ended with CR, so a leading LF completes that CRLF.
        self._skip_lf = False
        self._at_start = True
        self._data: list[str] = []
        self._event: str | None = None
        self._retry: int | None = None
        self._last_id: str | None = None

    def feed(self, data: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if not data:
            return events
        start = 0
        if self._skip_lf:
            self._skip_lf = False
            if data[0] == 0x0A:
                start = 1
        block_start = 0
        # The providers end lines with LF alone; without a CR in the data a
        # byte search finds each end, where the regex tests every byte
        # against its two first characters.
        lf_only = b"\r" not in data
        while True:
            if lf_only:
                end = data.find(b"\n", start)
                if end < 0:
                    break
                after = end + 1
            else:
                match = _LINE_END.search(data, start)
                if match is None:
                    break
                end, after = match.span()
            if self._tail:
                line = bytes(self._pending[-self._tail :]) + data[start:end]
                self._tail = 0
            else:
                line = data[start:end]
            start = after
            if self._at_start:
                self._at_start = False
                if line.startswith(_BOM):
                    line = line[3:]
            if line:
                self._line(line)
                continue
            if self._pending:
                raw = bytes(self._pending) + data[block_start:after]
                self._pending.clear()
            else:
                raw = data[block_start:after]
            block_start = after
            events.append(self._block(raw, complete=True))
        if data[-1] == 0x0D:
            self._skip_lf = True
        if block_start < len(data):
            self._pending += memoryview(data)[block_start:]
            self._tail += len(data) - start
        return events

    def flush(self) -> list[SSEEvent]:
        """End of stream: the unterminated tail, if any, as a block that is never dispatched.

        Its fields are still parsed so that what a lenient client might act on
        can be inspected. The decoder is then ready for a new stream.
        """
        events: list[SSEEvent] = []
        if self._tail:
            line = bytes(self._pending[-self._tail :])
            if self._at_start and line.startswith(_BOM):
                line = line[3:]
            if line:
                self._line(line)
        if self._pending:
            events.append(self._block(bytes(self._pending), complete=False))
        self._reset()
        return events

    def _line(self, line: bytes) -> None:
        if line[0] == 0x3A:  # ":" starts a comment
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, ""
        else:
            name = line[:colon]
            value_start = colon + 2 if line[colon + 1 : colon + 2] == b" " else colon + 1
            value = line[value_start:].decode("utf-8", "replace")
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value
        elif name == b"id":
            if "\0" not in value:
                self._last_id = value
        elif name == b"retry" and value.isascii() and value.isdigit():
            self._retry = int(value)

    def _block(self, raw: bytes, *, complete: bool) -> SSEEvent:
        data = self._data
        event = SSEEvent(
            event=self._event or None,
            data="\n".join(data),
            id=self._last_id,
            retry=self._retry,
            raw=raw,
            dispatch=complete and bool(data),
        )
        self._data = []
        self._event = None
        self._retry = None
        return event


class SSEFramer:
    """Whole events out of an event stream, without parsing them: what a relay forwards.

    ``feed`` returns the bytes of every block completed so far (possibly none)
    and keeps the incomplete rest, so the receiver's parser is always at a
    block boundary after what was forwarded. Streams with LF line ends, which
    is what the providers send, are cut at their last blank line by a byte
    search; a stream that uses CR is handed to an :class:`SSEDecoder` from
    its next block on, which reads CR, CRLF and LF alike.
    """

    __slots__ = ("_decoder", "_pending", "_searched")

    def __init__(self) -> None:
        self._pending = bytearray()
        # Bytes of `_pending` already searched for a blank line, less one,
        # so a large block arriving in many pieces is searched once.
        self._searched = 0
        self._decoder: SSEDecoder | None = None

    def first_block_apart(self, events: bytes) -> tuple[bytes, ...]:
        """Bytes that `feed` returned, as (their first block, the rest), or whole.

        Split only while the stream uses LF line ends, where every blank line
        is a "\n\n"; once it has used CR the blocks are left together.
        """
        end = events.find(b"\n\n") if self._decoder is None else -1
        if end < 0 or end + 2 == len(events):
            return (events,)
        return events[: end + 2], events[end + 2 :]

    def feed(self, data: bytes) -> bytes:
        if self._decoder is not None:
            return b"".join(event.raw for event in self._decoder.feed(data))
        if b"\r" in data:
            self._decoder = SSEDecoder()
            held = bytes(self._pending) + data
            self._pending.clear()
            return b"".join(event.raw for event in self._decoder.feed(held))
        pending = self._pending
        if not pending:
            # The common case: a chunk of whole events, forwarded as it is.
            if data.endswith(b"\n\n"):
                return data
            cut = data.rfind(b"\n\n")
            pending += data if cut < 0 else memoryview(data)[cut + 2 :]
            self._searched = max(0, len(pending) - 1)
            return b"" if cut < 0 else data[: cut + 2]
        pending += data
        cut = pending.rfind(b"\n\n", self._searched)
        if cut < 0:
            self._searched = max(0, len(pending) - 1)
            return b""
        out = bytes(pending[: cut + 2])
        del pending[: cut + 2]
        self._searched = max(0, len(pending) - 1)
        return out

    def flush(self) -> bytes:
        """End of stream: the unterminated tail, which no client dispatches as an event."""
        if self._decoder is not None:
            tail = b"".join(event.raw for event in self._decoder.flush())
        else:
            tail = bytes(self._pending)
        self._pending.clear()
        self._searched = 0
        self._decoder = None
        return tail


def encode_event(event: str | None, data: str) -> bytes:
    """One dispatchable event; ``data`` may span lines (CR, LF or CRLF)."""
    if event is not None and ("\n" in event or "\r" in event):
        raise ValueError("an SSE event name cannot contain a line break")
    lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    head = f"event: {event}\n" if event else ""
    return (head + "".join(f"data: {line}\n" for line in lines) + "\n").encode("utf-8")
