"""Answers that hold tool calls, in each provider's wire format as its API sends them.

Streamed arguments are cut into several fragments, as the APIs send them,
so the gateway has to put each call back together before judging it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

CHAT_MODEL = "gpt-4o-mini-2024-07-18"
RESPONSES_MODEL = "gpt-4.1-2025-04-14"
CLAUDE_MODEL = "claude-sonnet-4-20250514"


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str  # JSON text

    @classmethod
    def shell(cls, command: str, name: str = "shell") -> Call:
        return cls(name, json.dumps({"command": command}))


def _sse(obj: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


def _pieces(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# -- OpenAI Chat Completions --


def chat_completion(text: str | None, calls: list[Call]) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for i, c in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": CHAT_MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }


def chat_events(text: str | None, calls: list[Call], usage: bool = True, n: int = 3) -> list[bytes]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1}
    base["model"] = CHAT_MODEL

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**base, "choices": [choice]})

    out = [chunk({"role": "assistant", "content": "" if text else None, "refusal": None})]
    for piece in _pieces(text, n) if text else ():
        out.append(chunk({"content": piece}))
    for i, c in enumerate(calls):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": c.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in _pieces(c.arguments):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    if usage:
        out.append(
            _sse(
                {
                    **base,
                    "choices": [],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
                }
            )
        )
    out.append(b"data: [DONE]\n\n")
    return out


# -- OpenAI Responses --


def _message_item(text: str, status: str = "completed") -> dict[str, object]:
    return {
        "id": "msg_1",
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]
        if status == "completed"
        else [],
    }


def _call_item(at: int, i: int, c: Call, arguments: str, status: str) -> dict[str, object]:
    # `at`: the item's output index; `i`: the call's own number, as in the other formats.
    return {
        "id": f"fc_{at}",
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": f"call_{i}",
        "name": c.name,
    }


def response(text: str | None, calls: list[Call], status: str = "completed") -> dict[str, object]:
    output: list[object] = [_message_item(text)] if text else []
    offset = len(output)
    output += [_call_item(i + offset, i, c, c.arguments, "completed") for i, c in enumerate(calls)]
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": RESPONSES_MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 5,
            "output_tokens": 3,
            "total_tokens": 8,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def responses_events(text: str | None, calls: list[Call], n: int = 3) -> list[bytes]:
    events: list[dict[str, object]] = []
    done = response(text, calls)
    events.append(
        {"type": "response.created", "response": {**done, "status": "in_progress", "output": []}}
    )
    events.append(
        {
            "type": "response.in_progress",
            "response": {**done, "status": "in_progress", "output": []},
        }
    )
    index = 0
    if text:
        where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": []}
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": _message_item(text, "in_progress"),
            }
        )
        events.append({"type": "response.content_part.added", **where, "part": part})
        for piece in _pieces(text, n):
            events.append(
                {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
            )
        events.append({"type": "response.output_text.done", **where, "text": text, "logprobs": []})
        events.append(
            {"type": "response.content_part.done", **where, "part": {**part, "text": text}}
        )
        events.append(
            {"type": "response.output_item.done", "output_index": 0, "item": _message_item(text)}
        )
        index = 1
    for i, c in enumerate(calls):
        at = index + i
        item_id = f"fc_{at}"
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": at,
                "item": _call_item(at, i, c, "", "in_progress"),
            }
        )
        for piece in _pieces(c.arguments):
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item_id,
                    "output_index": at,
                    "delta": piece,
                }
            )
        events.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                "output_index": at,
                "arguments": c.arguments,
            }
        )
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": at,
                "item": _call_item(at, i, c, c.arguments, "completed"),
            }
        )
    events.append({"type": "response.completed", "response": done})
    return [_sse({**e, "sequence_number": n}, str(e["type"])) for n, e in enumerate(events)]


# -- Anthropic Messages --


def anthropic_message(text: str | None, calls: list[Call]) -> dict[str, object]:
    content: list[object] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": f"toolu_{i}", "name": c.name, "input": json.loads(c.arguments)}
        for i, c in enumerate(calls)
    ]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE_MODEL,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 3},
    }


def anthropic_events(text: str | None, calls: list[Call], n: int = 3) -> list[bytes]:
    start = {**anthropic_message(text, calls), "content": [], "stop_reason": None}
    out = [_sse({"type": "message_start", "message": start}, "message_start")]
    index = 0
    if text:
        out.append(
            _sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
        )
        out.append(_sse({"type": "ping"}, "ping"))
        for piece in _pieces(text, n):
            out.append(
                _sse(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                    "content_block_delta",
                )
            )
        out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        index = 1
    for i, c in enumerate(calls):
        at = index + i
        block = {"type": "tool_use", "id": f"toolu_{i}", "name": c.name, "input": {}}
        out.append(
            _sse(
                {"type": "content_block_start", "index": at, "content_block": block},
                "content_block_start",
            )
        )
        for piece in _pieces(c.arguments):
            out.append(
                _sse(
                    {
                        "type": "content_block_delta",
                        "index": at,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                    "content_block_delta",
                )
            )
        out.append(_sse({"type": "content_block_stop", "index": at}, "content_block_stop"))
    out.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 3},
            },
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out
