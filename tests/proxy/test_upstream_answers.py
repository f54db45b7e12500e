"""Answers an upstream gets wrong, through the gateway, as the OpenAI SDK sees them.

The upstream here is a raw loopback server that writes exactly the bytes of
each case: the gateway's own HTTP client (`gateway.proxy.origin`) reads them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
from aiohttp.test_utils import TestServer

from gateway.app import make_app
from tests.conftest import GatewayTestServer, build_config

CHAT_JSON = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "fine"},
                "finish_reason": "stop",
            }
        ],
    }
).encode()
GOOD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(CHAT_JSON),
    CHAT_JSON,
)


async def _gateway(answer: bytes, tmp_path: Path) -> AsyncIterator[str]:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            writer.write(answer)
            await writer.drain()
        finally:
            writer.close()

    upstream = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    config = build_config(f"http://127.0.0.1:{port}", tmp_path / "audit.jsonl")
    server: TestServer = GatewayTestServer(make_app(config))
    await server.start_server()
    try:
        yield str(server.make_url("/openai/v1")).rstrip("/")
    finally:
        await server.close()
        upstream.close()


def _ask(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)


async def test_a_good_answer_passes(tmp_path: Path) -> None:
    async for base_url in _gateway(GOOD, tmp_path):
        got = await _ask(base_url).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
        assert got.choices[0].message.content == "fine"


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(b"", id="closed-before-the-head"),
        pytest.param(b"SURPRISE\r\n\r\n", id="not-http"),
        pytest.param(GOOD[: len(GOOD) - 10], id="truncated-body"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"2\r\n{}\r\n0\r\n\r\n",
            id="length-and-chunked",
        ),
        pytest.param(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", id="huge-head"),
    ],
)
async def test_a_broken_answer_is_a_502_in_the_providers_shape(
    answer: bytes, tmp_path: Path
) -> None:
    async for base_url in _gateway(answer, tmp_path):
        with pytest.raises(openai.InternalServerError) as caught:
            await _ask(base_url).chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )
        assert caught.value.status_code == 502
        assert isinstance(caught.value.body, dict)
        assert caught.value.body["code"] == "upstream_unreachable"
    [line] = (tmp_path / "audit.jsonl").read_text().splitlines()
    payload = json.loads(line)["event"]["payload"]
    assert (payload["decision"], payload["status"]) == ("allow", 502)
