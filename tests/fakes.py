"""An in-process fake of the OpenAI and Anthropic APIs, recording what it received."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from aiohttp import web

from tests import replies

CHAT_MODEL = "gpt-4o-mini-2024-07-18"
CLAUDE_MODEL = "claude-sonnet-4-20250514"


@dataclass
class Received:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeUpstream:
    received: list[Received] = field(default_factory=list)
    # Seconds to wait before answering; tests use it for timeouts.
    delay: float = 0.0
    # Stop a stream after this many events without finishing it.
    die_after_events: int | None = None
    # Answer with this text and these tool calls (tests.replies) instead of the greeting.
    reply: tuple[str | None, list[replies.Call]] | None = None
    # Seconds between a stream's events; stop after this many and stall.
    event_delay: float = 0.0
    # A Content-Type to send instead of the right one (an upstream that mislabels).
    content_type: str | None = None
    # Fragments each scripted text and each call's arguments are streamed in.
    pieces: int = 3
    stall_after_events: int | None = None
    # Send a stream's events in one write, as a fast upstream's answer arrives.
    one_write: bool = False

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.received.append(
            Received(
                request.method,
                request.path,
                request.raw_path.partition("?")[2],
                {k.lower(): v for k, v in request.headers.items()},
                body,
            )
        )
        if self.delay:
            await asyncio.sleep(self.delay)
        payload = json.loads(body) if body and request.content_type == "application/json" else {}
        stream = isinstance(payload, dict) and payload.get("stream") is True
        path = request.path
        if self.reply is not None:
            scripted = self._scripted(path, stream)
            if scripted is not None:
                if isinstance(scripted, list):
                    return await self._sse(request, scripted)
                return web.Response(
                    body=json.dumps(scripted).encode(),
                    content_type=self.content_type or "application/json",
                )
        if path.endswith("/chat/completions"):
            if stream:
                return await self._sse(request, _chat_events())
            return web.json_response(_chat_completion())
        if path.endswith("/responses"):
            if stream:
                return await self._sse(request, _responses_events())
            return web.json_response(_response())
        if path.endswith("/messages"):
            if stream:
                return await self._sse(request, _anthropic_events())
            return web.json_response(_anthropic_message())
        if path.endswith("/models"):
            return web.json_response({"object": "list", "data": []})
        return web.json_response({"echo": path, "query": request.query_string})

    def _scripted(self, path: str, stream: bool) -> list[bytes] | dict[str, object] | None:
        assert self.reply is not None
        text, calls = self.reply
        if path.endswith("/chat/completions"):
            if stream:
                return replies.chat_events(text, calls, n=self.pieces)
            return replies.chat_completion(text, calls)
        if path.endswith("/responses"):
            return (
                replies.responses_events(text, calls) if stream else replies.response(text, calls)
            )
        if path.endswith("/messages"):
            if stream:
                return replies.anthropic_events(text, calls, n=self.pieces)
            return replies.anthropic_message(text, calls)
        return None

    async def _sse(self, request: web.Request, events: list[bytes]) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={"Content-Type": self.content_type or "text/event-stream"}
        )
        await resp.prepare(request)
        if self.one_write:
            await resp.write(b"".join(events))
            await resp.write_eof()
            return resp
        for i, event in enumerate(events):
            if self.die_after_events is not None and i >= self.die_after_events:
                # Drop the connection without a proper end of the chunked body.
                assert request.transport is not None
                request.transport.close()
                return resp
            if self.stall_after_events is not None and i >= self.stall_after_events:
                await asyncio.sleep(3600)
            await resp.write(event)
            await asyncio.sleep(self.event_delay)
        await resp.write_eof()
        return resp


def _data(obj: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


def _chat_completion() -> dict[str, object]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": CHAT_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hello from upstream", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }


def _chat_events() -> list[bytes]:
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": CHAT_MODEL,
    }
    out = []
    for i, piece in enumerate(["hello", " from", " upstream"]):
        delta: dict[str, object] = {"content": piece}
        if i == 0:
            delta["role"] = "assistant"
        out.append(
            _data({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        )
    out.append(_data({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    out.append(b"data: [DONE]\n\n")
    return out


def _response() -> dict[str, object]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "gpt-4.1-2025-04-14",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "hello from upstream", "annotations": []}
                ],
            }
        ],
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


def _responses_events() -> list[bytes]:
    done = _response()
    created = {**done, "status": "in_progress", "output": []}
    return [
        _data(
            {"type": "response.created", "sequence_number": 0, "response": created},
            "response.created",
        ),
        _data(
            {
                "type": "response.output_text.delta",
                "sequence_number": 1,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": "hello from upstream",
                "logprobs": [],
            },
            "response.output_text.delta",
        ),
        _data(
            {"type": "response.completed", "sequence_number": 2, "response": done},
            "response.completed",
        ),
    ]


def _anthropic_message() -> dict[str, object]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE_MODEL,
        "content": [{"type": "text", "text": "hello from upstream"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 3},
    }


def _anthropic_events() -> list[bytes]:
    start = {**_anthropic_message(), "content": [], "stop_reason": None}
    return [
        _data({"type": "message_start", "message": start}, "message_start"),
        _data(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        _data(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "hello"},
            },
            "content_block_delta",
        ),
        _data(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": " from upstream"},
            },
            "content_block_delta",
        ),
        _data({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        _data(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 3},
            },
            "message_delta",
        ),
        _data({"type": "message_stop"}, "message_stop"),
    ]
