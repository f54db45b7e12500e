"""OpenAI Chat Completions answers: ``chat.completion`` objects and their streamed chunks.

Streamed, a choice's tool calls arrive as ``delta.tool_calls[i]`` fragments
(id, type and name first, then pieces of ``arguments``) and end with the
choice's ``finish_reason``. The fragments are held, stripped from the chunks
that carried them; at the finish each call is judged. An allowed call goes
out whole in one chunk, a denied one becomes a ``delta.content`` text, and
the surviving calls are renumbered from 0 so the SDK's accumulator, which
indexes a list by ``index``, builds exactly them. The legacy
``delta.function_call`` is handled the same way. A finish reason of
``tool_calls`` (or ``function_call``) becomes ``stop`` when no call survives.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Final

from gateway.wire.calls import ToolCall
from gateway.wire.replies.base import (
    FilterFactory,
    Rewrite,
    Ruling,
    TextFilter,
    arguments_text,
    event_bytes,
    loads_object,
)
from gateway.wire.sse import SSEEvent

# A content delta with text in it, in an event passed unread.
_SAYS: Final = re.compile(rb'"content"\s*:\s*"[^"]')
# What a call's type names the object holding its name and arguments.
_ARGUMENT_KEYS: Final = {"function": "arguments", "custom": "input"}
_CALL_FINISH: Final = frozenset({"tool_calls", "function_call"})


@dataclass(slots=True)
class _Partial:
    """One call's fragments so far."""

    id: str = ""
    type: str = "function"
    name: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    legacy: bool = False  # a `function_call`, not one of `tool_calls`

    def call(self) -> ToolCall:
        kind = "function" if self.legacy else self.type
        return ToolCall("".join(self.name), "".join(self.arguments), self.id, kind)


@dataclass(slots=True)
class _Choice:
    calls: dict[int, _Partial] = field(default_factory=dict)
    text: TextFilter | None = None
    said: bool = False  # whether content was sent, so a replacement starts on its own line
    kept: int = 0  # calls released so far, the next released call's index
    finished: bool = False


def _fragment(partial: _Partial, delta: dict[str, Any]) -> None:
    if isinstance(delta.get("id"), str):
        partial.id = delta["id"]
    if isinstance(delta.get("type"), str):
        partial.type = delta["type"]
    body = delta.get(_type_key(partial.type))
    if not isinstance(body, dict):
        return
    if isinstance(body.get("name"), str):
        partial.name.append(body["name"])
    args = body.get(_ARGUMENT_KEYS.get(partial.type, "arguments"))
    if isinstance(args, str):
        partial.arguments.append(args)


def _type_key(kind: str) -> str:
    return kind if kind in _ARGUMENT_KEYS else "function"


def _released(partial: _Partial, index: int) -> dict[str, Any]:
    """A held call as one whole delta."""
    call = partial.call()
    if partial.legacy:
        return {"function_call": {"name": call.name, "arguments": call.arguments}}
    key = _type_key(partial.type)
    return {
        "tool_calls": [
            {
                "index": index,
                "id": partial.id,
                "type": partial.type,
                key: {"name": call.name, _ARGUMENT_KEYS.get(key, "arguments"): call.arguments},
            }
        ]
    }


def _separated(text: str, said: bool) -> str:
    return f"\n\n{text}" if said else text


class ChatStream:
    """Edits one streamed chat completion, chunk by chunk."""

    def __init__(self, text_filter: FilterFactory | None = None) -> None:
        self._filter = text_filter
        self._choices: dict[int, _Choice] = {}
        self._spoke = False
        # What `release` renders: the event and its rewritten chunk, or None
        # to send the raw bytes; and the calls that the event completed.
        self._event: SSEEvent | None = None
        self._chunk: dict[str, Any] | None = None
        self._changed = False
        self._completing: list[tuple[int, _Choice, list[_Partial]]] = []
        self._template: dict[str, Any] = {}

    def _choice(self, index: int) -> _Choice:
        choice = self._choices.get(index)
        if choice is None:
            choice = self._choices[index] = _Choice(
                text=self._filter() if self._filter is not None else None, said=self._spoke
            )
        return choice

    def feed(self, event: SSEEvent) -> list[ToolCall]:
        self._event = event
        self._chunk = None
        self._changed = False
        self._completing = []
        if not event.dispatch:
            return []
        if event.data.strip() == "[DONE]":
            # A stream may end without a finish reason: its held calls end here.
            for index, choice in self._choices.items():
                self._complete(index, choice)
            return self._calls()
        chunk = loads_object(event.data)
        if chunk is None or not isinstance(chunk.get("choices"), list):
            return []
        self._chunk = chunk
        self._template = {k: v for k, v in chunk.items() if k not in ("choices", "usage")}
        kept: list[object] = []
        for raw in chunk["choices"]:
            if not isinstance(raw, dict) or not isinstance(raw.get("index"), int):
                kept.append(raw)
                continue
            if self._choice_chunk(raw):
                kept.append(raw)
        if len(kept) != len(chunk["choices"]):
            chunk["choices"] = kept
            self._changed = True
        return self._calls()

    def _choice_chunk(self, raw: dict[str, Any]) -> bool:
        """Take the call fragments out of one choice's delta; whether anything is left to send."""
        choice = self._choice(raw["index"])
        delta = raw.get("delta")
        stripped = False
        if isinstance(delta, dict):
            fragments = delta.pop("tool_calls", None)
            if isinstance(fragments, list):
                stripped = True
                for fragment in fragments:
                    if isinstance(fragment, dict) and isinstance(fragment.get("index"), int):
                        i = fragment["index"]
                        _fragment(choice.calls.setdefault(i, _Partial()), fragment)
            legacy = delta.pop("function_call", None)
            if isinstance(legacy, dict):
                stripped = True
                partial = choice.calls.setdefault(-1, _Partial(legacy=True))
                _fragment(partial, {"function": legacy})
            content = delta.get("content")
            if isinstance(content, str) and content:
                if choice.text is not None:
                    delta["content"] = choice.text.feed(content)
                    self._changed = True
                choice.said = True
        self._changed |= stripped
        if raw.get("finish_reason") is not None:
            self._complete(raw["index"], choice)
            return True
        if stripped and not delta:
            # Only fragments were in it; the logprobs of a call's tokens go with them.
            return raw.get("logprobs") is not None
        return True

    def _complete(self, index: int, choice: _Choice) -> None:
        if choice.finished:
            return
        choice.finished = True
        held = [choice.calls[i] for i in sorted(choice.calls)]
        choice.calls.clear()
        if held or choice.text is not None:
            self._changed = True
            self._completing.append((index, choice, held))

    def pending(self) -> bool:
        """Whether a call is still incomplete: a stream ending now would leave it half-sent."""
        return any(choice.calls for choice in self._choices.values())

    def quiet(self) -> bool:
        """Whether an event that names no call may pass unread: nothing held, no text filter."""
        return self._filter is None and not self.pending()

    def skipped_bytes(self, raw: bytes) -> None:
        if _SAYS.search(raw):
            # Content went out (for which choice is not read): a later
            # replacement text starts on its own line.
            self._spoke = True
            for choice in self._choices.values():
                choice.said = True

    def _calls(self) -> list[ToolCall]:
        return [p.call() for _, _, held in self._completing for p in held]

    def release(self, rulings: list[Ruling]) -> bytes:
        event = self._event
        assert event is not None
        if not self._changed:
            return event.raw
        out: list[bytes] = []
        rulings_left = iter(rulings)
        kept_any: dict[int, bool] = {}
        for index, choice, held in self._completing:
            tail = choice.text.flush() if choice.text is not None else ""
            if tail:
                out.append(self._synthetic(event, index, {"content": tail}))
            for partial in held:
                ruling = next(rulings_left)
                if ruling.allow:
                    out.append(self._synthetic(event, index, _released(partial, choice.kept)))
                    choice.kept += 1
                else:
                    text = _separated(ruling.text, choice.said)
                    out.append(self._synthetic(event, index, {"content": text}))
                    choice.said = True
            kept_any[index] = choice.kept > 0
        chunk = self._chunk
        if chunk is not None:
            for raw in chunk["choices"]:
                if (
                    isinstance(raw, dict)
                    and raw.get("index") in kept_any
                    and raw.get("finish_reason") in _CALL_FINISH
                    and not kept_any[raw["index"]]
                ):
                    raw["finish_reason"] = "stop"
            if chunk["choices"] or "usage" in chunk:
                out.append(event_bytes(event, chunk))
        else:
            out.append(event.raw)  # [DONE]
        return b"".join(out)

    def _synthetic(self, event: SSEEvent, index: int, delta: dict[str, Any]) -> bytes:
        chunk = {
            **self._template,
            "choices": [{"index": index, "delta": delta, "finish_reason": None}],
        }
        return event_bytes(event, chunk)


class ChatBody:
    """Edits one whole ``chat.completion``."""

    def __init__(self, body: dict[str, Any], rewrite: Rewrite | None = None) -> None:
        self._body = copy.deepcopy(body)
        self._rewrite = rewrite
        self._found: list[tuple[dict[str, Any], dict[str, Any], str]] = []
        for choice in self._body.get("choices") or ():
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, dict):
                continue
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict):
                    self._found.append((choice, call, "tool_calls"))
            if isinstance(message.get("function_call"), dict):
                self._found.append((choice, message["function_call"], "function_call"))

    def calls(self) -> list[ToolCall]:
        out = []
        for _, call, where in self._found:
            if where == "function_call":
                out.append(
                    ToolCall(str(call.get("name", "")), arguments_text(call.get("arguments")))
                )
                continue
            kind = call.get("type")
            kind = kind if isinstance(kind, str) else "function"
            body = call.get(_type_key(kind))
            body = body if isinstance(body, dict) else {}
            args = body.get(_ARGUMENT_KEYS.get(_type_key(kind), "arguments"))
            out.append(
                ToolCall(
                    str(body.get("name", "")), arguments_text(args), str(call.get("id", "")), kind
                )
            )
        return out

    def release(self, rulings: list[Ruling]) -> dict[str, Any]:
        denied: dict[int, list[str]] = {}
        for (choice, call, where), ruling in zip(self._found, rulings, strict=True):
            if ruling.allow:
                continue
            message = choice["message"]
            denied.setdefault(id(choice), []).append(ruling.text)
            if where == "function_call":
                del message["function_call"]
            else:
                message["tool_calls"] = [c for c in message["tool_calls"] if c is not call]
        for choice in self._body.get("choices") or ():
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            if isinstance(content, str) and self._rewrite is not None:
                message["content"] = content = self._rewrite(content)
            texts = denied.get(id(choice))
            if texts:
                added = "\n\n".join(texts)
                said = isinstance(content, str) and content
                message["content"] = f"{content}\n\n{added}" if said else added
                if message.get("tool_calls") == []:
                    # The API leaves the key out when there are no calls.
                    del message["tool_calls"]
                survivors = message.get("tool_calls") or message.get("function_call")
                if not survivors and choice.get("finish_reason") in _CALL_FINISH:
                    choice["finish_reason"] = "stop"
        return self._body
