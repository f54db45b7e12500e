"""OpenAI Responses API answers: ``response`` objects and their streamed events.

The calls the agent runs are output items (``function_call``,
``custom_tool_call``, the built-in ``local_shell_call``, ``shell_call``,
``apply_patch_call``, ``computer_call``). Streamed, every event of such an
item, from ``response.output_item.added`` to ``response.output_item.done``, is
held; the done item is judged. An allowed item's events go out as they came;
a denied one is replaced, at the same ``output_index``, by an assistant
message item whose text says what was denied and why, in the six events the
API sends for one. The final ``response`` (``completed``, ``incomplete``,
``failed``) carries the same replacement in its ``output``.

The SDK's stream state checks nothing of ``sequence_number``, but clients
that resume a stream by it do, so every event leaves with the next number in
order: events are re-encoded only once a replacement has shifted them.
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

# Items the agent runs, as opposed to the ones the API runs itself (web
# search, file search, code interpreter, remote MCP) or only shows.
CALL_ITEMS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "computer_call",
    }
)
_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_TEXT_DELTA = "response.output_text.delta"
# Events that carry a part's whole text, which must agree with the deltas sent.
_TEXT_WHOLE = frozenset(
    {"response.output_text.done", "response.content_part.done", "response.output_item.done"}
)


def item_call(item: dict[str, Any]) -> ToolCall:
    kind = str(item.get("type", ""))
    name = item.get("name")
    if not isinstance(name, str):
        name = kind.removesuffix("_call")
    if isinstance(item.get("arguments"), str):
        args = item["arguments"]
    elif isinstance(item.get("input"), str):
        args = item["input"]
    else:
        args = arguments_text(item.get("action", item.get("operation", item.get("actions"))))
    kind = (
        "function" if kind == "function_call" else "custom" if kind == "custom_tool_call" else kind
    )
    return ToolCall(name, args, str(item.get("call_id", "")), kind)


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = (
        [{"type": "output_text", "text": text, "annotations": []}]
        if status != "in_progress"
        else []
    )
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _replacement_id(item: dict[str, Any]) -> str:
    # Stable and recognisable: the denied call's own id under the message prefix.
    return "msg_reefgate_" + str(item.get("id") or item.get("call_id") or "call")


@dataclass(slots=True)
class _Held:
    events: list[tuple[SSEEvent, dict[str, Any]]] = field(default_factory=list)


class ResponsesStream:
    """Edits one streamed response, event by event."""

    def __init__(self, text_filter: FilterFactory | None = None) -> None:
        self._filter = text_filter
        self._held: dict[int, _Held] = {}
        # Every call item judged, by its id: as released, or its replacement.
        # Wherever the stream states a judged item again (the final response),
        # it says exactly this, so what the agent runs is what was judged.
        self._verdicts: dict[str, dict[str, Any]] = {}
        # Text as sent per (output_index, content_index), when a filter changed it.
        self._filters: dict[tuple[int, int], TextFilter] = {}
        self._sent_text: dict[tuple[int, int], list[str]] = {}
        self._seq = 0
        self._event: SSEEvent | None = None
        self._payload: dict[str, Any] | None = None
        self._out: list[tuple[SSEEvent | None, dict[str, Any]]] | None = None
        # Calls this event completes: the output index whose held events go
        # with it, or None for a call stated only inside this event.
        self._completing: list[tuple[int | None, dict[str, Any]]] = []
        # Whether the current event's payload was changed, so its raw bytes no longer do.
        self._modified = False
        # Whether an event left with a number other than its own (a replacement
        # changed how many there are): from then on every event is renumbered.
        self._shifted = False

    def pending(self) -> bool:
        return bool(self._held)

    def quiet(self) -> bool:
        """Whether an event that names no call may pass unread: nothing held, no
        text filter, and every event so far left with its own sequence number."""
        return self._filter is None and not self._held and not self._shifted

    def skipped_bytes(self, raw: bytes) -> None:
        # It keeps its own number, which is the next one while nothing has shifted.
        self._seq += 1

    def feed(self, event: SSEEvent) -> list[ToolCall]:
        self._event = event
        self._payload = None
        self._out = None
        self._completing = []
        self._modified = False
        if not event.dispatch:
            return []
        payload = loads_object(event.data)
        self._payload = payload
        if payload is None:
            return []
        kind = payload.get("type")
        index = payload.get("output_index")
        item = payload.get("item")
        if kind == "response.output_item.added" and isinstance(index, int) and _is_call(item):
            assert isinstance(item, dict)
            if _key(item) not in self._verdicts:
                self._held[index] = _Held([(event, payload)])
                self._out = []
                return []
        if isinstance(index, int) and index in self._held:
            self._held[index].events.append((event, payload))
            self._out = []
            if kind == "response.output_item.done" and _is_call(item):
                assert isinstance(item, dict)
                self._completing.append((index, item))
            return self._calls()
        if _is_call(item):
            # A call item outside the events that open and close one.
            assert isinstance(item, dict)
            if _key(item) not in self._verdicts:
                self._completing.append((None, item))
        response = payload.get("response")
        if isinstance(response, dict):
            self._stated(response, final=kind in _FINAL)
        return self._calls()

    def _stated(self, response: dict[str, Any], *, final: bool) -> None:
        """Calls a response object states: judged unless they already were."""
        output = response.get("output")
        found: set[int] = set()
        for i, item in enumerate(output if isinstance(output, list) else ()):
            if not _is_call(item) or _key(item) in self._verdicts:
                continue
            if i in self._held:
                found.add(i)
            self._completing.append((i if i in self._held else None, item))
        if final:
            # Calls the stream never finished and the final response does not
            # state are never released.
            for i in set(self._held) - found:
                del self._held[i]

    def _calls(self) -> list[ToolCall]:
        return [item_call(item) for _, item in self._completing]

    def release(self, rulings: list[Ruling]) -> bytes:
        event, payload = self._event, self._payload
        assert event is not None
        out: list[bytes] = []
        for (index, item), ruling in zip(self._completing, rulings, strict=True):
            held = self._held.pop(index, _Held()) if index is not None else _Held()
            if ruling.allow:
                self._verdicts[_key(item)] = item
                for e, p in held.events:
                    out.append(self._send(e, p, modified=False))
                continue
            replacement = message_item(_replacement_id(item), ruling.text)
            self._verdicts[_key(item)] = replacement
            if index is not None:
                for name, p in _message_events(index, replacement, ruling.text):
                    out.append(self._send(None, {"type": name, **p}, name=name))
        if self._out is not None:
            return b"".join(out)
        if payload is None:
            out.append(event.raw)
            return b"".join(out)
        kind = payload.get("type")
        self._restate(payload)
        if kind in _FINAL:
            self._final_text(payload)
        elif kind == _TEXT_DELTA and self._filter is not None:
            key = _part_key(payload)
            if key is not None and isinstance(payload.get("delta"), str):
                text = self._text_filter(key).feed(payload["delta"])
                payload["delta"] = text
                self._sent_text.setdefault(key, []).append(text)
                self._modified = True
        elif kind in _TEXT_WHOLE and self._filter is not None:
            self._whole_text(payload, out)
        out.append(self._send(event, payload, modified=self._modified))
        return b"".join(out)

    def _text_filter(self, key: tuple[int, int]) -> TextFilter:
        found = self._filters.get(key)
        if found is None:
            assert self._filter is not None
            found = self._filters[key] = self._filter()
        return found

    def _whole_text(self, payload: dict[str, Any], out: list[bytes]) -> None:
        """A part's closing events carry its whole text: the text the deltas actually sent."""
        kind = payload["type"]
        if kind == "response.output_text.done":
            key = _part_key(payload)
            if key is None:
                return
            tail = self._text_filter(key).flush()
            if tail:
                delta: dict[str, Any] = {
                    "type": _TEXT_DELTA,
                    "item_id": payload.get("item_id"),
                    "output_index": key[0],
                    "content_index": key[1],
                    "delta": tail,
                    "logprobs": [],
                }
                out.append(self._send(None, delta, name=_TEXT_DELTA))
                self._sent_text.setdefault(key, []).append(tail)
            payload["text"] = "".join(self._sent_text.get(key, ()))
            self._modified = True
        elif kind == "response.content_part.done":
            key = _part_key(payload)
            part = payload.get("part")
            if key is not None and isinstance(part, dict) and part.get("type") == "output_text":
                part["text"] = "".join(self._sent_text.get(key, ()))
                self._modified = True
        else:
            index = payload.get("output_index")
            item = payload.get("item")
            if isinstance(index, int) and isinstance(item, dict):
                self._item_text(index, item)
                self._modified = True

    def _item_text(self, index: int, item: dict[str, Any]) -> None:
        if item.get("type") != "message" or not isinstance(item.get("content"), list):
            return
        for j, part in enumerate(item["content"]):
            if isinstance(part, dict) and part.get("type") == "output_text":
                sent = self._sent_text.get((index, j))
                if sent is not None:
                    part["text"] = "".join(sent)

    def _restate(self, payload: dict[str, Any]) -> None:
        """Judged call items, wherever this event states them, as judged."""
        item = payload.get("item")
        if _is_call(item):
            assert isinstance(item, dict)
            judged = self._verdicts.get(_key(item))
            if judged is not None and judged != item:
                payload["item"] = judged
                self._modified = True
        response = payload.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        if not isinstance(output, list):
            return
        for i, entry in enumerate(output):
            if _is_call(entry):
                judged = self._verdicts.get(_key(entry))
                if judged is not None and judged != entry:
                    output[i] = judged
                    self._modified = True

    def _final_text(self, payload: dict[str, Any]) -> None:
        if self._filter is None:
            return
        response = payload.get("response")
        if not isinstance(response, dict) or not isinstance(response.get("output"), list):
            return
        for i, item in enumerate(response["output"]):
            if isinstance(item, dict):
                self._item_text(i, item)
        self._modified = True

    def _send(
        self,
        event: SSEEvent | None,
        payload: dict[str, Any],
        *,
        modified: bool = True,
        name: str | None = None,
    ) -> bytes:
        """The event with the next sequence number, as sent when nothing forces a re-encoding."""
        seq = self._seq
        self._seq += 1
        if event is not None and not modified and payload.get("sequence_number", seq) == seq:
            return event.raw
        if event is None or payload.get("sequence_number", seq) != seq:
            self._shifted = True
        if "sequence_number" in payload or event is None:
            payload["sequence_number"] = seq
        if event is None:
            return encode_event(name, dumps(payload))
        return event_bytes(event, payload)


def _is_call(item: object) -> bool:
    return isinstance(item, dict) and item.get("type") in CALL_ITEMS


def _key(item: dict[str, Any]) -> str:
    return str(item.get("id") or item.get("call_id") or "")


def _part_key(payload: dict[str, Any]) -> tuple[int, int] | None:
    index, content = payload.get("output_index"), payload.get("content_index")
    if isinstance(index, int) and isinstance(content, int):
        return (index, content)
    return None


def _message_events(
    index: int, item: dict[str, Any], text: str
) -> list[tuple[str, dict[str, Any]]]:
    """The events the API sends for one assistant message holding ``text``."""
    item_id = item["id"]
    part = {"type": "output_text", "text": text, "annotations": []}
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    return [
        (
            "response.output_item.added",
            {"output_index": index, "item": message_item(item_id, text, "in_progress")},
        ),
        ("response.content_part.added", {**where, "part": {**part, "text": ""}}),
        ("response.output_text.delta", {**where, "delta": text, "logprobs": []}),
        ("response.output_text.done", {**where, "text": text, "logprobs": []}),
        ("response.content_part.done", {**where, "part": part}),
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]


class ResponsesBody:
    """Edits one whole ``response`` object."""

    def __init__(self, body: dict[str, Any], rewrite: Rewrite | None = None) -> None:
        self._body = copy.deepcopy(body)
        self._rewrite = rewrite
        output = self._body.get("output")
        self._output: list[Any] = output if isinstance(output, list) else []
        self._found = [
            i
            for i, item in enumerate(self._output)
            if isinstance(item, dict) and item.get("type") in CALL_ITEMS
        ]

    def calls(self) -> list[ToolCall]:
        return [item_call(self._output[i]) for i in self._found]

    def release(self, rulings: list[Ruling]) -> dict[str, Any]:
        for i, ruling in zip(self._found, rulings, strict=True):
            if not ruling.allow:
                self._output[i] = message_item(_replacement_id(self._output[i]), ruling.text)
        if self._rewrite is not None:
            for item in self._output:
                if not isinstance(item, dict) or item.get("type") != "message":
                    continue
                for part in item.get("content") or ():
                    if (
                        isinstance(part, dict)
                        and isinstance(part.get("text"), str)
                        and part.get("type") == "output_text"
                    ):
                        part["text"] = self._rewrite(part["text"])
        return self._body
