"""The request path as an attacker tries it: headers, upgrades, stalls, malformed requests."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from aiohttp import web

from gateway.config.models import Credential, Limits, Match, ScanHeaders, Team, Upstream
from tests.conftest import Stack, StackFactory
from tests.fakes import FakeUpstream

# Built by concatenation so this file does not itself look like it holds a key.
GITHUB_PAT = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
OPENAI_KEY = "sk-proj-" + "Zq8RmT2vXk9LwN4bY7cHd3Jf6Gp1Ks5Ua0EiOeQr" + "T3BlbkFJ" + "a8Rn2Wq5Zx7Kc"
ANTHROPIC_KEY = "sk-ant-api03-" + "Hq3vR8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4eLm7Np" + "-Xw2Rt5Yu8IoAA"
SLACK_TOKEN = "xoxb-" + "2048613345-5123456789012-" + "Rk4Tq9LmZ2xW8vN3bY7cHd1J"
CHAT = "/openai/v1/chat/completions"


def _openai(stack: Stack, **kwargs: Any) -> openai.AsyncOpenAI:
    kwargs.setdefault("api_key", "agent-key")
    return openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", max_retries=0, **kwargs)


def _anthropic(stack: Stack, **kwargs: Any) -> anthropic.AsyncAnthropic:
    kwargs.setdefault("api_key", "agent-key")
    return anthropic.AsyncAnthropic(base_url=f"{stack.url}/anthropic", max_retries=0, **kwargs)


async def _chat(client: openai.AsyncOpenAI) -> str | None:
    completion = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
    )
    return completion.choices[0].message.content


def _entries(stack: Stack) -> list[dict[str, Any]]:
    return [
        json.loads(line)["event"]["payload"] for line in stack.audit_path.read_text().splitlines()
    ]


# -- request headers go upstream, so the floor reads them --


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"x-my-token": GITHUB_PAT}, id="custom header"),
        pytest.param({"X-Deploy-Key": SLACK_TOKEN}, id="another custom header"),
        pytest.param({"Cookie": f"theme=dark; gh={GITHUB_PAT}"}, id="cookie"),
        pytest.param({"User-Agent": f"agent/1.0 ({GITHUB_PAT})"}, id="user-agent"),
        pytest.param({"Authorization": f"Bearer {ANTHROPIC_KEY}"}, id="another provider's key"),
        pytest.param({"Authorization": f"Bearer {GITHUB_PAT}"}, id="a token as the api key"),
    ],
)
async def test_a_secret_in_a_header_is_denied(stack: Stack, headers: dict[str, str]) -> None:
    with pytest.raises(openai.PermissionDeniedError) as info:
        await _chat(_openai(stack, default_headers=headers))
    assert info.value.response.headers["x-reefgate-category"] == "secret"
    assert stack.upstream.received == []
    audit = stack.audit_path.read_text()
    assert GITHUB_PAT not in audit
    assert ANTHROPIC_KEY not in audit
    [entry] = _entries(stack)
    assert entry["findings"][0]["where"].startswith("header")


async def test_the_providers_own_key_format_passes_in_its_credential_header(stack: Stack) -> None:
    assert await _chat(_openai(stack, api_key=OPENAI_KEY)) == "hello from upstream"
    assert stack.upstream.received[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"
    message = await _anthropic(stack, api_key=ANTHROPIC_KEY).messages.create(
        model="claude-sonnet-4-20250514",
        max_tokens=16,
        messages=[{"role": "user", "content": "hello"}],
    )
    assert message.content[0].type == "text"
    # An OpenAI key sent to Anthropic is not that provider's credential.
    with pytest.raises(anthropic.PermissionDeniedError):
        await _anthropic(stack, api_key=OPENAI_KEY).messages.create(
            model="claude-sonnet-4-20250514",
            max_tokens=16,
            messages=[{"role": "user", "content": "hello"}],
        )
    assert len(stack.upstream.received) == 2


async def test_custody_replaces_the_credential_header_so_it_is_not_judged(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack(
        teams={"default": Team(default=True, credentials={"openai": Credential(api_key_env="K")})},
        env={"K": "real-provider-key"},
    )
    # Whatever the agent holds in its credential header never leaves.
    assert await _chat(_openai(stack, api_key=GITHUB_PAT)) == "hello from upstream"
    assert stack.upstream.received[0].headers["authorization"] == "Bearer real-provider-key"


async def test_a_gateway_issued_key_is_stripped_not_judged(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(
        teams={"agents": Team(default=True, match=Match(keys_env=["GW_KEY"]))},
        env={"GW_KEY": GITHUB_PAT},
    )
    assert await _chat(_openai(stack, api_key=GITHUB_PAT)) == "hello from upstream"
    assert "authorization" not in stack.upstream.received[0].headers


async def test_key_kinds_name_another_providers_key_format_for_an_upstream(
    make_stack: StackFactory,
) -> None:
    # An OpenAI-compatible upstream that takes keys of another format.
    stack: Stack = await make_stack(upstream_options={"key_kinds": ["anthropic_api_key"]})
    assert await _chat(_openai(stack, api_key=ANTHROPIC_KEY)) == "hello from upstream"
    with pytest.raises(openai.PermissionDeniedError):
        await _chat(_openai(stack, api_key=OPENAI_KEY))


async def test_scan_headers_skip_leaves_named_headers_alone(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(scan_headers=ScanHeaders(skip=["X-Trace-Token"]))
    assert await _chat(_openai(stack, default_headers={"x-trace-token": GITHUB_PAT})) == (
        "hello from upstream"
    )
    with pytest.raises(openai.PermissionDeniedError):
        await _chat(_openai(stack, default_headers={"x-other-token": GITHUB_PAT}))


# -- protocol switches are refused until their frames are inspected --


async def test_a_websocket_upgrade_is_refused_in_the_providers_shape(stack: Stack) -> None:
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as info:
            await session.ws_connect(f"{stack.url}/openai/v1/realtime?model=gpt-realtime")
    assert info.value.status == 403
    assert stack.upstream.received == []
    [entry] = _entries(stack)
    assert (entry["decision"], entry["category"]) == ("deny", "upgrade_refused")


@pytest.mark.parametrize(
    "headers",
    [
        {"Connection": "Upgrade", "Upgrade": "websocket"},
        {"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c", "HTTP2-Settings": "AAMAAABk"},
        {"Upgrade": "websocket"},
        {"Connection": "keep-alive, upgrade"},
    ],
)
async def test_every_upgrade_request_is_refused(
    make_stack: StackFactory, headers: dict[str, str]
) -> None:
    stack: Stack = await make_stack(
        upstreams={"anthropic": Upstream(base_url="http://127.0.0.1:9", flavor="anthropic")}
    )
    url = f"{stack.url}/anthropic/v1/models"
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as r:
        assert r.status == 403
        body = await r.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "permission_error"


# -- stalls: a client that stops sending is cut off --


async def _raw(stack: Stack, data: bytes, wait: float = 5.0) -> bytes:
    """Send raw bytes and read until the gateway closes the connection."""
    server = stack.gateway
    assert server.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(data)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), wait)
    finally:
        writer.close()


async def test_a_body_that_stops_coming_gets_408(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(limits=Limits(body_read_timeout_s=0.2))
    started = time.monotonic()
    answer = await _raw(
        stack,
        b"POST /openai/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: 500\r\n\r\n"
        b'{"model": "gpt-4o-mini", "messages": [',
    )
    assert time.monotonic() - started < 4
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert json.loads(body)["error"]["code"] == "request_timeout"
    assert stack.upstream.received == []
    [entry] = _entries(stack)
    assert (entry["decision"], entry["category"], entry["status"]) == (
        "error",
        "request_timeout",
        408,
    )


@pytest.mark.parametrize("write_at_once", [True, False], ids=["whole", "in-pieces"])
async def test_a_chunked_body_past_the_limit_gets_413(
    make_stack: StackFactory, write_at_once: bool
) -> None:
    # No Content-Length to refuse it by: the bytes read are what count, whether
    # the body was all there when the handler began or still arriving.
    stack: Stack = await make_stack(limits=Limits(max_body_bytes=1024))
    payload = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "a" * 3000}]}
    ).encode()
    head = (
        b"POST /openai/v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunks = [payload] if write_at_once else [payload[i : i + 700] for i in range(0, 3100, 700)]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c) + b"0\r\n\r\n"
    answer = await _raw(stack, head + body)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 413"), status_line
    assert json.loads(rest.partition(b"\r\n\r\n")[2])["error"]["code"] == "request_too_large"
    assert stack.upstream.received == []


async def test_a_malformed_chunked_body_gets_400(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack()
    answer = await _raw(
        stack,
        b"POST /openai/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5\r\n{"a":\r\nzz\r\n1}\r\n0\r\n\r\n',
    )
    # aiohttp's parser refuses it before any handler runs, in the gateway's shape.
    assert answer.split(b" ", 2)[1] == b"400", answer[:80]
    assert stack.upstream.received == []


async def test_a_request_that_stops_mid_headers_is_closed(
    make_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.proxy import server

    monkeypatch.setattr(server, "IDLE_TIMEOUT_S", 0.3)
    stack: Stack = await make_stack()
    answer = await _raw(stack, b"POST /openai/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-A")
    assert answer == b""


# -- requests aiohttp's parser refuses --


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            b"POST /openai/v1/models HTTP/1.1\r\nHost: x\r\nTOKENLINE\r\n\r\n", id="no colon"
        ),
        pytest.param(
            b"POST /openai/v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n",
            id="bad content-length",
        ),
        pytest.param(
            b"POST /openai/v1/models HTTP/1.1\r\nHost: x\r\nX-Note: a\x00TOKENLINE\r\n\r\n",
            id="nul in a header",
        ),
        pytest.param(
            b"POST /openai/v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\nX-Note: TOKENLINE\r\n\r\n",
            id="length and chunked",
        ),
        pytest.param(b"GET /openai/TOKENLINE\x7f HTTP/1.1\r\nHost: x\r\n\r\n", id="bad target"),
    ],
)
async def test_a_malformed_request_is_refused_in_the_providers_shape_and_audited(
    stack: Stack, raw: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    answer = await _raw(stack, raw.replace(b"TOKENLINE", GITHUB_PAT.encode()))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith((b"HTTP/1.0 400", b"HTTP/1.1 400"))
    assert b"application/json" in head
    assert json.loads(body)["error"]["code"] == "malformed_request"
    assert GITHUB_PAT.encode() not in answer
    assert GITHUB_PAT not in caplog.text
    assert stack.upstream.received == []
    [entry] = _entries(stack)
    assert (entry["decision"], entry["category"], entry["status"]) == (
        "error",
        "malformed_request",
        400,
    )
    assert GITHUB_PAT not in stack.audit_path.read_text()


async def test_an_unknown_expectation_is_not_echoed(stack: Stack) -> None:
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    answer = await _raw(
        stack,
        (
            f"POST {CHAT} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nExpect: {GITHUB_PAT}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        ).encode(),
    )
    assert answer.startswith(b"HTTP/1.1 200")
    assert GITHUB_PAT.encode() not in answer
    assert "expect" not in stack.upstream.received[0].headers


async def test_a_secret_as_the_http_method_is_denied(stack: Stack) -> None:
    # Methods are tokens: an uppercase credential such as an AWS key id is one.
    aws_key_id = "AKIA" + "QX7RZ2M4T6V8B3N5"
    answer = await _raw(
        stack,
        f"{aws_key_id} /openai/v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
    )
    # aiohttp's C parser refuses methods it does not know (400); its Python
    # parser takes any token, and then the floor reads the method (403).
    assert answer.startswith((b"HTTP/1.0 400", b"HTTP/1.1 403"))
    assert aws_key_id.encode() not in answer
    assert stack.upstream.received == []
    assert aws_key_id not in stack.audit_path.read_text()


# -- inspection is bounded in time and does not hold up other requests --


async def test_inspection_past_its_time_limit_is_a_guard_failure(
    make_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.guard import floor

    find = floor.Floor.find

    def slow(self: floor.Floor, text: str) -> list[tuple[str, str]]:
        time.sleep(0.05)
        return find(self, text)

    stack: Stack = await make_stack(limits=Limits(inspect_timeout_ms=100))
    monkeypatch.setattr(floor.Floor, "find", slow)
    with pytest.raises(openai.PermissionDeniedError) as info:
        await _chat(_openai(stack))
    assert info.value.response.headers["x-reefgate-category"] == "guard_failure"
    assert stack.upstream.received == []


async def test_a_large_body_lets_other_requests_through_while_it_is_judged(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.guard import floor, pipeline

    # Smaller steps than in production, so that a 1 MB text takes many.
    monkeypatch.setattr(pipeline, "_WINDOW", 16 * 1024)
    monkeypatch.setattr(pipeline, "_OVERLAP", 1024)
    monkeypatch.setattr(pipeline, "_YIELD_CHARS", 8 * 1024)
    judging = asyncio.Event()
    find = floor.Floor.find

    def noting(self: floor.Floor, text: str) -> list[tuple[str, str]]:
        judging.set()
        return find(self, text)

    monkeypatch.setattr(floor.Floor, "find", noting)
    text = "The quarterly report lists revenue by region and product line. " * 16_000
    body = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
    ).encode()
    order: list[str] = []

    async def big() -> None:
        async with (
            aiohttp.ClientSession() as s,
            s.post(stack.url + CHAT, data=body, headers={"Content-Type": "application/json"}) as r,
        ):
            assert r.status == 200
            order.append("big")

    async def health() -> None:
        await judging.wait()
        async with aiohttp.ClientSession() as s, s.get(stack.url + "/healthz") as r:
            assert r.status == 200
            order.append("health")

    await asyncio.gather(big(), health())
    assert order == ["health", "big"]


# -- an event stream is relayed event by event --


async def test_an_upstream_failure_mid_event_ends_the_stream_at_an_event_boundary(
    make_stack: StackFactory,
) -> None:
    chunks = [
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{"content":"hel"},"finish_reason":null}]}\n\n'
        b'data: {"id":"c","object":"chat.completion.chunk","choi',
        b'ces":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}\n\n'
        b'data: {"id":"c","object":"chat.com',
    ]

    class Dying(FakeUpstream):
        async def _handle(self, request: web.Request) -> web.StreamResponse:
            await request.read()
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for chunk in chunks:
                await resp.write(chunk)
                await asyncio.sleep(0.01)
            assert request.transport is not None
            request.transport.close()
            return resp

    stack: Stack = await make_stack(Dying())
    body = json.dumps(
        {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    async with (
        aiohttp.ClientSession() as s,
        s.post(stack.url + CHAT, data=body, headers={"Content-Type": "application/json"}) as r,
    ):
        raw = await asyncio.wait_for(r.read(), 5)
    events = raw.split(b"\n\n")
    assert events[-1] == b""
    payloads = [json.loads(e.removeprefix(b"data: ")) for e in events[:-1]]
    assert [p.get("choices", [{}])[0].get("delta", {}).get("content") for p in payloads[:2]] == [
        "hel",
        "lo",
    ]
    # The half-sent third event is dropped; the error event stands on its own.
    assert payloads[2]["error"]["code"] == "upstream_error"
    assert len(payloads) == 3


# -- fingerprints in the audit cannot be used to test guesses offline --


async def test_audit_fingerprints_are_keyed_by_the_deployment(stack: Stack) -> None:
    import hashlib
    import hmac

    with pytest.raises(openai.PermissionDeniedError):
        await _openai(stack).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"token {GITHUB_PAT}"}]
        )
    [entry] = _entries(stack)
    [finding] = entry["findings"]
    assert finding["kind"] == "github_token"
    assert finding["fingerprint"] != hashlib.sha256(GITHUB_PAT.encode()).hexdigest()[:16]
    key = bytes.fromhex((stack.audit_path.parent / "fingerprint.key").read_text().strip())
    keyed = hmac.new(key, GITHUB_PAT.encode(), hashlib.sha256).hexdigest()[:16]
    assert finding["fingerprint"] == keyed


async def test_a_crafted_repeated_body_is_judged_not_stalled_on(make_stack: StackFactory) -> None:
    # A short Kubernetes-like header repeated: each "kind: Secret" line once
    # re-read its whole document, 46 KB took 18 s. Linear now, it is judged
    # far inside a deadline that the quadratic scan overran by seconds.
    stack: Stack = await make_stack(limits=Limits(inspect_timeout_ms=3000))
    crafted = "kind: Secret\ndata:\n  k: v\n" * 1800
    assert await _chat_text(stack, crafted) == "hello from upstream"


async def _chat_text(stack: Stack, text: str) -> str | None:
    completion = await _openai(stack).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
    )
    return completion.choices[0].message.content


@pytest.mark.parametrize(
    ("connection", "upgrade"),
    [
        ("", False),
        ("keep-alive", False),
        ("close", False),
        ("Upgrade", True),
        ("keep-alive, UPGRADE ", True),
        (" upgrade,keep-alive", True),
        ("upgrade-insecure", False),
        ("x-upgrade, keep-alive", False),
    ],
)
def test_a_connection_header_naming_upgrade_is_a_protocol_switch(
    connection: str, upgrade: bool
) -> None:
    from aiohttp.test_utils import make_mocked_request

    from gateway.proxy.reverse import _is_upgrade

    headers = {"Connection": connection} if connection else {}
    request = make_mocked_request("POST", "/openai/v1/chat/completions", headers=headers)
    assert _is_upgrade(request) is upgrade


class _LongAnswer(FakeUpstream):
    """A chat completion of ``chars`` characters, sent as ``how`` says."""

    def __init__(self, chars: int, how: str) -> None:
        super().__init__()
        self.chars = chars
        self.how = how

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        answer = {
            "id": "chatcmpl-long",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "a" * self.chars},
                    "finish_reason": "stop",
                }
            ],
        }
        data = json.dumps(answer).encode()
        if self.how == "declared":
            return web.Response(body=data, content_type="application/json")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        if self.how == "whole":
            await response.write(data)
        else:
            for i in range(0, len(data), 500):
                await response.write(data[i : i + 500])
                await asyncio.sleep(0.01)
        await response.write_eof()
        return response


async def _ask(stack: Stack) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            stack.url + "/openai/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
        ) as resp,
    ):
        return resp.status, await resp.read()


@pytest.mark.parametrize("how", ["declared", "whole", "pieces"])
async def test_an_answer_past_the_limit_is_not_relayed(make_stack: StackFactory, how: str) -> None:
    # An answer too big to judge gets 502, whether its length was declared,
    # it arrived whole with its headers or it was still arriving.
    stack: Stack = await make_stack(_LongAnswer(3000, how), limits=Limits(max_body_bytes=1024))
    status, body = await _ask(stack)
    assert status == 502, body[:200]
    assert json.loads(body)["error"]["code"] == "upstream_error"
    assert b"aaaa" not in body


@pytest.mark.parametrize("how", ["whole", "pieces"])
async def test_a_chunked_answer_within_the_limit_is_relayed_as_sent(
    make_stack: StackFactory, how: str
) -> None:
    stack: Stack = await make_stack(_LongAnswer(3000, how), limits=Limits(max_body_bytes=8192))
    status, body = await _ask(stack)
    assert status == 200, body[:200]
    assert json.loads(body)["choices"][0]["message"]["content"] == "a" * 3000
