"""An upstream whose streamed answer pauses after its first event until the test lets it go.

Tests of what happens to a stream in flight (a stop signal, a config reload)
use it to know, without timing, that the stream is under way and not done.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from aiohttp import web

from tests import replies


@dataclass
class GatedUpstream:
    """Streams ``replies.chat_events(text, calls)``; every answer waits at ``release``."""

    text: str = "All done, nothing was harmed."
    calls: list[replies.Call] = field(default_factory=list)
    # Set once the first event of an answer is sent.
    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def events(self) -> list[bytes]:
        return replies.chat_events(self.text, self.calls, n=4)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        return app

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        payload = json.loads(await request.read())
        if not payload.get("stream"):
            await self.release.wait()
            return web.json_response(replies.chat_completion(self.text, self.calls))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        first, *rest = self.events()
        await response.write(first)
        self.started.set()
        await self.release.wait()
        for event in rest:
            await response.write(event)
        await response.write_eof()
        return response


def stream_request(prompt: str = "tidy up please") -> bytes:
    return json.dumps(
        {
            "model": "gpt-4o-mini",
            "stream": True,
            "messages": [{"role": "user", "content": prompt}],
        }
    ).encode()


def data_lines(body: bytes) -> list[str]:
    """The ``data:`` payloads of an SSE body, in order."""
    return [
        line.removeprefix("data:").strip()
        for line in body.decode().splitlines()
        if line.startswith("data:")
    ]


def streamed_text(body: bytes) -> str:
    """The text deltas of a chat completions stream, joined."""
    out = []
    for data in data_lines(body):
        if data == "[DONE]":
            continue
        for choice in json.loads(data).get("choices", []):
            content = choice.get("delta", {}).get("content")
            if content:
                out.append(content)
    return "".join(out)


def streamed_calls(body: bytes) -> list[str]:
    """The names of the tool calls a chat completions stream hands the agent."""
    names = []
    for data in data_lines(body):
        if data == "[DONE]":
            continue
        for choice in json.loads(data).get("choices", []):
            for call in choice.get("delta", {}).get("tool_calls") or []:
                name = call.get("function", {}).get("name")
                if name:
                    names.append(name)
    return names
