"""What the response editors share: a ruling on a call, the text filter, JSON helpers.

An editor is sans-IO. For a stream it takes one decoded SSE event at a time in
two steps, so the caller can judge in between without the editor awaiting
anything::

    calls = editor.feed(event)            # the calls this event completes
    rulings = [await judge(c) for c in calls]
    out = editor.release(rulings)         # the bytes to send for this event

An event that completes no call and needs no change comes back as its raw
bytes: the common text delta costs one JSON parse and no re-encoding.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.wire.calls import ToolCall
from gateway.wire.sse import SSEEvent, encode_event


@dataclass(frozen=True, slots=True)
class Ruling:
    """The guardian's answer for one call: release it, or replace it with ``text``."""

    allow: bool
    # What the model reads in place of a denied call: what was denied and why.
    text: str = ""


class TextFilter(Protocol):
    """Rewrites one stream of model text as it arrives (output redaction)."""

    def feed(self, text: str) -> str: ...

    def flush(self) -> str: ...


# A new filter per text stream (a choice, a content block, an output part).
FilterFactory = Callable[[], TextFilter]
# Whole-text rewriting, for answers that are not streamed.
Rewrite = Callable[[str], str]


class StreamEditor(Protocol):
    def feed(self, event: SSEEvent) -> list[ToolCall]: ...

    def release(self, rulings: list[Ruling]) -> bytes: ...


class BodyEditor(Protocol):
    def calls(self) -> list[ToolCall]: ...

    def release(self, rulings: list[Ruling]) -> dict[str, Any]: ...


def dumps(value: object) -> str:
    # Compact, non-ASCII kept: what the providers themselves send.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def loads_object(data: str) -> dict[str, Any] | None:
    """The event's JSON object, or None for anything else (which is relayed as sent)."""
    if not data or data[0] != "{":
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def event_bytes(event: SSEEvent, payload: dict[str, Any]) -> bytes:
    """``event`` again with a new payload, its event name and id kept."""
    head = f"id: {event.id}\n" if event.id is not None and event.raw.find(b"id:") >= 0 else ""
    return head.encode("utf-8") + encode_event(event.event, dumps(payload))


def arguments_text(value: object) -> str:
    """Arguments as the guardian reads them: the string as sent, or JSON for anything else."""
    return value if isinstance(value, str) else dumps(value if value is not None else {})
