"""Editing an LLM's answer before the agent sees it: tool calls judged, text filtered.

An answer is recognised by its shape, not by the path that asked for it, so
a call fetched back later (``GET /v1/responses/{id}``, a retrieved stream)
is judged like one returned at once. Anything that is not one of these
shapes passes unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from gateway import compiled
from gateway.wire.calls import ToolCall
from gateway.wire.replies.base import (
    BodyEditor,
    FilterFactory,
    Rewrite,
    Ruling,
    StreamEditor,
    loads_object,
)
from gateway.wire.replies.chat import ChatBody, ChatStream
from gateway.wire.replies.messages import MessagesBody, MessagesStream
from gateway.wire.replies.responses import ResponsesBody, ResponsesStream
from gateway.wire.sse import SSEEvent

__all__ = ["AnswerStream", "Ruling", "body_editor"]

_MESSAGE_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)


def body_editor(body: object, rewrite: Rewrite | None = None) -> BodyEditor | None:
    """The editor for a whole answer, or None when ``body`` is not an answer."""
    if not isinstance(body, dict):
        return None
    kind = body.get("object")
    if kind == "chat.completion":
        return ChatBody(body, rewrite)
    if kind == "response":
        return ResponsesBody(body, rewrite)
    if body.get("type") == "message" and isinstance(body.get("content"), list):
        return MessagesBody(body, rewrite)
    return None


# Words every call-bearing event holds (tool_calls, function_call, the Responses
# *_call items, tool_use). A JSON escape could spell them otherwise, so an
# event with any \u escape is always parsed.
_CALL_WORDS = re.compile(rb"_call|function|tool_use|\\u")


def _py_names_no_call(raw: bytes) -> bool:
    """Whether these bytes cannot hold a tool call in any answer format."""
    return _CALL_WORDS.search(raw) is None


# The same, by memchr for the words' rare bytes (`_names.c`), when it is built.
_NAMES_C: Final = compiled.load("gateway.wire.replies._names")
names_no_call: Final[Callable[[bytes], bool]] = (
    _py_names_no_call if _NAMES_C is None else _NAMES_C.names_no_call
)


def _kind(payload: dict[str, Any]) -> str | None:
    if payload.get("object") == "chat.completion.chunk":
        return "chat"
    kind = payload.get("type")
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "responses"
        if kind in _MESSAGE_EVENTS:
            return "messages"
    return None


class AnswerStream:
    """One streamed answer, whichever of the three formats its events turn out to be.

    The format is read from the first event that has one; events of no known
    shape (pings, errors, comments) pass as they came.
    """

    def __init__(self, text_filter: FilterFactory | None = None) -> None:
        self._filter = text_filter
        self._editor: ChatStream | ResponsesStream | MessagesStream | None = None
        self._current: StreamEditor | None = None
        self._raw = b""

    def passes(self, events: bytes) -> bool:
        """Whether these whole events may go out unread, all of them at once.

        Only once the format is known, nothing is held, and none of them can
        name a call. The Responses editor reads every event (it counts them
        for their sequence numbers), so its events never pass here.
        """
        editor = self._editor
        if editor is None or isinstance(editor, ResponsesStream):
            return False
        if not editor.quiet() or not names_no_call(events):
            return False
        editor.skipped_bytes(events)
        return True

    def pending(self) -> bool:
        """Whether a call is incomplete: ending the stream now must not release any of it."""
        return self._editor is not None and self._editor.pending()

    def feed(self, event: SSEEvent) -> list[ToolCall]:
        editor = self._editor
        if editor is None and event.dispatch:
            payload = loads_object(event.data)
            kind = _kind(payload) if payload is not None else None
            if kind == "chat":
                editor = self._editor = ChatStream(self._filter)
            elif kind == "responses":
                editor = self._editor = ResponsesStream(self._filter)
            elif kind == "messages":
                editor = self._editor = MessagesStream(self._filter)
        if editor is None or (event.dispatch and editor.quiet() and names_no_call(event.raw)):
            # Most events are text: with nothing held, one that cannot name a
            # call passes without being parsed.
            if editor is not None:
                editor.skipped_bytes(event.raw)
            self._current = None
            self._raw = event.raw
            return []
        self._current = editor
        return editor.feed(event)

    def release(self, rulings: list[Ruling]) -> bytes:
        if self._current is None:
            return self._raw
        return self._current.release(rulings)
