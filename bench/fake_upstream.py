"""A fake OpenAI chat-completions upstream for the benchmarks, on uvloop.

    python -m bench.fake_upstream [--port 0] [--hold-s SECONDS] [--token-gap-ms MS]

Answers every `POST .../chat/completions` with the same small completion, or,
for `"stream": true`, with an SSE stream of 20 events written one by one.
With `--hold-s` a stream stops after its first event and is held open that
long (or until the client goes away), for the memory benchmark. With
`--token-gap-ms` the events of a stream are written that far apart, as a
model's tokens are, so each reaches the client on its own (ttft benchmark).
A path with `/tool-call/` before `chat/completions` gets an answer that ends
with a tool call instead: a few text tokens, then `read_file` in fragments
and finish reason `tool_calls`. It prints
`fake-upstream listening on http://127.0.0.1:PORT` once ready.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re

from aiohttp import web

from bench._common import run_async, serve_app

MODEL = "gpt-4o-mini-2024-07-18"
_CREATED = 1_716_000_000

COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": _CREATED,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "I read the file and the failing test; the fix is a missing "
                    "await on line 42. Shall I apply it?",
                    "refusal": None,
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1100, "completion_tokens": 25, "total_tokens": 1125},
    }
).encode()

_TOKENS = ["I", " read", " the", " file", " and", " the", " failing", " test", ";", " the",
           " fix", " is", " a", " missing", " await", "."]  # fmt: skip


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    event = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(event).encode() + b"\n\n"


EVENTS: list[bytes] = [
    _chunk({"role": "assistant", "content": ""}),
    *(_chunk({"content": t}) for t in _TOKENS),
    _chunk({}, "stop"),
    b"data: "
    + json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": _CREATED,
            "model": MODEL,
            "choices": [],
            "usage": {"prompt_tokens": 1100, "completion_tokens": 16, "total_tokens": 1116},
        }
    ).encode()
    + b"\n\n",
    b"data: [DONE]\n\n",
]

# The answer of a `/tool-call/` path: text, then one call whose arguments come
# in pieces, as the API streams them.
TOOL_TEXT = ["I", " will", " read", " the", " failing", " test", " first", "."]
TOOL_CALL_ID = "call_bench_1"
TOOL_CALL_NAME = "read_file"
TOOL_ARGUMENT_PIECES = [
    '{"path',
    '": "tests/',
    "test_cache",
    '.py", "reason',
    '": "see what fails"}',
]
TOOL_CALL_ARGUMENTS = "".join(TOOL_ARGUMENT_PIECES)


def _call_fragment(fragment: dict[str, object]) -> bytes:
    return _chunk({"tool_calls": [{"index": 0, **fragment}]})


TOOL_EVENTS: list[bytes] = [
    _chunk({"role": "assistant", "content": ""}),
    *(_chunk({"content": t}) for t in TOOL_TEXT),
    _call_fragment(
        {
            "id": TOOL_CALL_ID,
            "type": "function",
            "function": {"name": TOOL_CALL_NAME, "arguments": ""},
        }
    ),
    *(_call_fragment({"function": {"arguments": piece}}) for piece in TOOL_ARGUMENT_PIECES),
    _chunk({}, "tool_calls"),
    *EVENTS[-2:],  # usage, [DONE]
]

TOOL_COMPLETION = json.dumps(
    {
        **json.loads(COMPLETION),
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "".join(TOOL_TEXT),
                    "tool_calls": [
                        {
                            "id": TOOL_CALL_ID,
                            "type": "function",
                            "function": {
                                "name": TOOL_CALL_NAME,
                                "arguments": TOOL_CALL_ARGUMENTS,
                            },
                        }
                    ],
                    "refusal": None,
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
    }
).encode()

# A byte search instead of a JSON parse keeps the fake cheap, so that it is
# never what limits the throughput measured through a proxy.
_STREAM = re.compile(rb'"stream"\s*:\s*true')


class Upstream:
    def __init__(self, hold_s: float, token_gap_s: float = 0.0) -> None:
        self.hold_s = hold_s
        self.token_gap_s = token_gap_s

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        tool_call = "tool-call/" in request.match_info.get("prefix", "")
        if not _STREAM.search(body):
            answer = TOOL_COMPLETION if tool_call else COMPLETION
            return web.Response(body=answer, content_type="application/json")
        events = TOOL_EVENTS if tool_call else EVENTS
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        if self.hold_s > 0:
            await resp.write(events[0])
            # Cancelled when the client goes away (handler_cancellation below).
            await asyncio.sleep(self.hold_s)
            for event in events[1:]:
                await resp.write(event)
        elif self.token_gap_s > 0:
            for i, event in enumerate(events):
                if i:
                    await asyncio.sleep(self.token_gap_s)
                await resp.write(event)
        else:
            for event in events:
                await resp.write(event)
        await resp.write_eof()
        return resp

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]}
        )

    async def other(self, request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(
            {"error": {"message": f"no route {request.path}", "type": "invalid_request_error"}},
            status=404,
        )


async def serve(port: int, hold_s: float, max_s: float, token_gap_ms: float = 0.0) -> None:
    upstream = Upstream(hold_s, token_gap_ms / 1000)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/{prefix:.*}chat/completions", upstream.chat)
    app.router.add_get("/{prefix:.*}models", upstream.models)
    app.router.add_route("*", "/{tail:.*}", upstream.other)
    await serve_app(app, "fake-upstream", port, max_s)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fake_upstream")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--hold-s", type=float, default=0.0)
    parser.add_argument(
        "--token-gap-ms", type=float, default=0.0, help="pause between a stream's events"
    )
    parser.add_argument("--max-s", type=float, default=3600.0, help="exit after this long")
    args = parser.parse_args()
    run_async(serve(args.port, args.hold_s, args.max_s, args.token_gap_ms))


if __name__ == "__main__":
    main()
