"""Anthropic Messages answers: ``message`` objects and their streamed events.

A call is a ``tool_use`` content block. Streamed, its ``content_block_start``,
its ``input_json_delta`` pieces and its ``content_block_stop`` are held; at
the stop the input is judged. An allowed block's events go out as they came;
a denied one becomes a text block at the same index, so every later index
still holds. ``stop_reason: tool_use`` becomes ``end_turn`` when no call of
the message survives. Blocks the API runs itself (``server_tool_use``, MCP)
are not the agent's to run and pass.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from gateway.wire.calls import ToolCall
from gateway.wire.replies.base import (
    FilterFactory,
    Rewrite,
    Ruling,
    TextFilter,
    arguments_text,
    dumps,
    event_bytes,
    loads_object,
)
from gateway.wire.sse import SSEEvent, encode_event


@dataclass(slots=True)
class _Held:
    block: dict[str, Any]
    events: list[bytes] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)

    def call(self) -> ToolCall:
        # A block with no delta carries its input whole in the start event.
        args = "".join(self.pieces) if self.pieces else arguments_text(self.block.get("input"))
        return ToolCall(str(self.block.get("name", "")), args, str(self.block.get("id", "")))


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return encode_event(name, dumps({"type": name, **payload}))


class MessagesStream:
    """Edits one streamed message, event by event."""

    def __init__(self, text_filter: FilterFactory | None = None) -> None:
        self._filter = text_filter
        self._held: dict[int, _Held] = {}
        self._filters: dict[int, TextFilter] = {}
        self._calls_made = 0
        self._calls_kept = 0
        self._event: SSEEvent | None = None
        self._payload: dict[str, Any] | None = None
        # Calls this event completes, by block index; None for a block stated
        # inside the event itself (a message_start that already holds content).
        self._completing: list[tuple[int | None, _Held]] = []
        # Indices of judged blocks: anything more about them would change
        # what was judged, and is dropped.
        self._settled: set[int] = set()
        self._hold = False
        self._modified = False

    def pending(self) -> bool:
        return bool(self._held)

    def quiet(self) -> bool:
        """Whether an event that names no call may pass unread: nothing held or judged yet."""
        return self._filter is None and not self._held and not self._settled

    def skipped_bytes(self, raw: bytes) -> None:
        pass

    def feed(self, event: SSEEvent) -> list[ToolCall]:
        self._event = event
        self._completing = []
        self._hold = False
        self._modified = False
        self._payload = payload = loads_object(event.data) if event.dispatch else None
        if payload is None:
            return []
        kind = payload.get("type")
        index = payload.get("index")
        if isinstance(index, int) and index in self._settled:
            self._hold = True
            return []
        if kind == "message_start":
            message = payload.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    self._completing.append((None, _Held(block)))
        elif kind == "content_block_start" and isinstance(index, int):
            block = payload.get("content_block")
            if isinstance(block, dict) and block.get("type") == "tool_use":
                self._held[index] = _Held(block, [event.raw])
                self._hold = True
        elif isinstance(index, int) and index in self._held:
            held = self._held[index]
            held.events.append(event.raw)
            self._hold = True
            delta = payload.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("partial_json"), str):
                held.pieces.append(delta["partial_json"])
            if kind == "content_block_stop":
                self._completing.append((index, self._held.pop(index)))
        elif kind in ("message_delta", "message_stop"):
            # Blocks the stream never stopped: judged on what arrived.
            for i in sorted(self._held):
                self._completing.append((i, self._held.pop(i)))
        return [held.call() for _, held in self._completing]

    def release(self, rulings: list[Ruling]) -> bytes:
        event, payload = self._event, self._payload
        assert event is not None
        out: list[bytes] = []
        for (index, held), ruling in zip(self._completing, rulings, strict=True):
            self._calls_made += 1
            if index is None:
                # Stated in this event's own message: edited in place below.
                if ruling.allow:
                    self._calls_kept += 1
                else:
                    held.block.clear()
                    held.block.update(type="text", text=ruling.text)
                    self._modified = True
                continue
            self._settled.add(index)
            if ruling.allow:
                self._calls_kept += 1
                out.extend(held.events)
                if not _stopped(held):
                    out.append(_event("content_block_stop", {"index": index}))
                continue
            out.append(
                _event(
                    "content_block_start",
                    {"index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            out.append(
                _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "text_delta", "text": ruling.text}},
                )
            )
            out.append(_event("content_block_stop", {"index": index}))
        if self._hold or payload is None:
            if not self._hold:
                out.append(event.raw)
            return b"".join(out)
        self._text(payload, out)
        if payload.get("type") == "message_delta":
            delta = payload.get("delta")
            if (
                isinstance(delta, dict)
                and delta.get("stop_reason") == "tool_use"
                and self._calls_made
                and not self._calls_kept
            ):
                delta["stop_reason"] = "end_turn"
                self._modified = True
        out.append(event_bytes(event, payload) if self._modified else event.raw)
        return b"".join(out)

    def _text(self, payload: dict[str, Any], out: list[bytes]) -> None:
        if self._filter is None:
            return
        kind, index = payload.get("type"), payload.get("index")
        if not isinstance(index, int):
            return
        if kind == "content_block_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict) and delta.get("type") == "text_delta":
                text = delta.get("text")
                if isinstance(text, str):
                    delta["text"] = self._text_filter(index).feed(text)
                    self._modified = True
        elif kind == "content_block_stop" and index in self._filters:
            tail = self._filters.pop(index).flush()
            if tail:
                out.append(
                    _event(
                        "content_block_delta",
                        {"index": index, "delta": {"type": "text_delta", "text": tail}},
                    )
                )

    def _text_filter(self, index: int) -> TextFilter:
        found = self._filters.get(index)
        if found is None:
            assert self._filter is not None
            found = self._filters[index] = self._filter()
        return found


def _stopped(held: _Held) -> bool:
    last = held.events[-1]
    return b"content_block_stop" in last[:64]


class MessagesBody:
    """Edits one whole ``message``."""

    def __init__(self, body: dict[str, Any], rewrite: Rewrite | None = None) -> None:
        self._body = copy.deepcopy(body)
        self._rewrite = rewrite
        content = self._body.get("content")
        self._content: list[Any] = content if isinstance(content, list) else []
        self._found = [
            i
            for i, block in enumerate(self._content)
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]

    def calls(self) -> list[ToolCall]:
        out = []
        for i in self._found:
            block = self._content[i]
            out.append(
                ToolCall(
                    str(block.get("name", "")),
                    arguments_text(block.get("input")),
                    str(block.get("id", "")),
                )
            )
        return out

    def release(self, rulings: list[Ruling]) -> dict[str, Any]:
        kept = 0
        for i, ruling in zip(self._found, rulings, strict=True):
            if ruling.allow:
                kept += 1
            else:
                self._content[i] = {"type": "text", "text": ruling.text}
        if self._found and not kept and self._body.get("stop_reason") == "tool_use":
            self._body["stop_reason"] = "end_turn"
        if self._rewrite is not None:
            for block in self._content:
                if (
                    isinstance(block, dict)
                    and block.get("type") == "text"
                    and isinstance(block.get("text"), str)
                ):
                    block["text"] = self._rewrite(block["text"])
        return self._body
