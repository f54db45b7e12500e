"""Raw HTTP through the reverse proxy: routing, bad input, teams, upstream failures."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from gateway.config.models import Credential, Match, Team, Upstream
from tests.conftest import Stack, StackFactory
from tests.fakes import FakeUpstream

SECRET = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
CHAT = "/openai/v1/chat/completions"


def _chat(text: str) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}


async def _post(
    stack: Stack, path: str, data: bytes, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    hdrs = {"Content-Type": "application/json", **headers}
    skip = ("Accept-Encoding", "User-Agent")
    async with (
        aiohttp.ClientSession(skip_auto_headers=skip) as s,
        s.post(stack.url + path, data=data, headers=hdrs) as r,
    ):
        return r.status, dict(r.headers), await r.read()


async def _alive(stack: Stack) -> None:
    status, _, _ = await _post(stack, CHAT, json.dumps(_chat("still there?")).encode())
    assert status == 200


async def test_path_query_method_preserved(stack: Stack) -> None:
    url = URL(stack.url + "/openai/v1/models?limit=2&after=x%2Fy", encoded=True)
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        assert r.status == 200
        assert r.headers["x-reefgate-decision"] == "allow"
    [got] = stack.upstream.received
    assert (got.method, got.path, got.query) == ("GET", "/v1/models", "limit=2&after=x%2Fy")


@pytest.mark.parametrize(
    ("path", "sent"),
    [
        pytest.param("/openai", ("/", ""), id="no-path"),
        pytest.param("/openai?limit=1", ("/", "limit=1"), id="only-a-query"),
        pytest.param("/openai/", ("/", ""), id="a-slash"),
    ],
)
async def test_the_upstream_gets_a_path_when_the_request_names_none(
    stack: Stack, path: str, sent: tuple[str, str]
) -> None:
    url = URL(stack.url + path, encoded=True)
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        assert r.status == 200
    [got] = stack.upstream.received
    assert (got.path, got.query) == sent


@pytest.mark.parametrize(
    ("data", "content_type", "status", "code"),
    [
        (b'{"model": "x", "messages": [', "application/json", 400, "invalid_json"),
        (b'{"model": "x", "messages": "nope"}', "application/json", 400, "invalid_payload"),
        (b'{"model": "x", "model": "y", "messages": []}', "application/json", 400, "invalid_json"),
        (
            b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}',
            "application/json",
            400,
            "invalid_utf8",
        ),
        (
            b'{"messages": [{"role": "user", "content": "a\\ud800b"}]}',
            "application/json",
            400,
            "invalid_utf8",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", 400, "invalid_json"),
        (
            json.dumps({"model": "x", "messages": [{"role": "user", "content": "hi"}]}).encode(),
            "text/plain",
            415,
            "unsupported_media_type",
        ),
    ],
    ids=[
        "invalid-json",
        "bad-shape",
        "duplicate-key",
        "invalid-utf8",
        "lone-surrogate",
        "deep-nesting",
        "wrong-content-type",
    ],
)
async def test_bad_input(
    stack: Stack, data: bytes, content_type: str, status: int, code: str
) -> None:
    got_status, _, body = await _post(stack, CHAT, data, **{"Content-Type": content_type})
    assert got_status == status
    err = json.loads(body)["error"]
    assert err["code"] == code
    assert err["message"]
    assert stack.upstream.received == []
    await _alive(stack)


async def test_deeply_nested_but_parseable_is_refused(stack: Stack) -> None:
    nested: object = "x"
    for _ in range(200):
        nested = {"a": nested}
    status, _, body = await _post(
        stack,
        CHAT,
        json.dumps({"model": "x", "messages": [{"role": "user", "content": [nested]}]}).encode(),
    )
    assert status == 400
    assert json.loads(body)["error"]["code"] in ("invalid_payload", "invalid_json")


async def test_huge_body_413(make_stack: StackFactory) -> None:
    from gateway.config.models import Limits

    stack: Stack = await make_stack(limits=Limits(max_body_bytes=64 * 1024))
    big = json.dumps(_chat("a" * 200_000)).encode()
    status, _, body = await _post(stack, CHAT, big)
    assert status == 413
    assert json.loads(body)["error"]["code"] == "request_too_large"
    assert stack.upstream.received == []
    await _alive(stack)


async def test_gzip_body_inspected_and_forwarded_as_sent(stack: Stack) -> None:
    clean = gzip.compress(json.dumps(_chat("hello")).encode())
    status, _, _ = await _post(stack, CHAT, clean, **{"Content-Encoding": "gzip"})
    assert status == 200
    assert stack.upstream.received[0].headers["content-encoding"] == "gzip"
    dirty = gzip.compress(json.dumps(_chat(SECRET)).encode())
    status, headers, _ = await _post(stack, CHAT, dirty, **{"Content-Encoding": "gzip"})
    assert status == 403
    assert headers["x-reefgate-category"] == "secret"
    assert len(stack.upstream.received) == 1


async def test_a_secret_in_a_second_gzip_member_never_reaches_upstream(stack: Stack) -> None:
    # Upstream decoders that read every member would see the second one.
    smuggled = gzip.compress(json.dumps(_chat("hello")).encode()) + gzip.compress(
        json.dumps(_chat(SECRET)).encode()
    )
    status, _, raw = await _post(stack, CHAT, smuggled, **{"Content-Encoding": "gzip"})
    assert status == 400
    assert json.loads(raw)["error"]["code"] == "invalid_encoding"
    assert stack.upstream.received == []
    assert SECRET not in stack.audit_path.read_text()


async def test_repeated_content_encoding_headers_are_read_as_one_list(stack: Stack) -> None:
    # Read as the first header alone, the gzip bytes would be checked as they are.
    headers = CIMultiDict(
        [
            ("Content-Type", "application/json"),
            ("Content-Encoding", "identity"),
            ("Content-Encoding", "gzip"),
        ]
    )
    body = gzip.compress(json.dumps(_chat(SECRET)).encode())
    async with (
        aiohttp.ClientSession() as s,
        s.post(stack.url + CHAT, data=body, headers=headers) as r,
    ):
        assert r.status == 415
        assert (await r.json())["error"]["code"] == "unsupported_media_type"
    assert stack.upstream.received == []


async def test_gzip_bomb_refused(make_stack: StackFactory) -> None:
    from gateway.config.models import Limits

    stack: Stack = await make_stack(limits=Limits(max_body_bytes=64 * 1024))
    bomb = gzip.compress(b" " * 10_000_000)
    status, _, _ = await _post(stack, CHAT, bomb, **{"Content-Encoding": "gzip"})
    assert status == 413


@pytest.mark.parametrize(
    "query",
    [f"token={SECRET}", SECRET, f"{SECRET}=", f"a=1&{SECRET}&b=2", f"a=1%26t%3D{SECRET}"],
)
async def test_secret_in_query_denied(stack: Stack, query: str) -> None:
    async with (
        aiohttp.ClientSession() as s,
        s.get(URL(f"{stack.url}/openai/v1/models?{query}", encoded=True)) as r,
    ):
        assert r.status == 403
    assert stack.upstream.received == []
    assert SECRET not in stack.audit_path.read_text()


async def test_other_paths_scan_every_string(stack: Stack) -> None:
    body = json.dumps(
        {"model": "text-embedding-3-small", "input": ["fine", f"token {SECRET}"]}
    ).encode()
    status, _, _ = await _post(stack, "/openai/v1/embeddings", body)
    assert status == 403
    status, _, _ = await _post(
        stack, "/openai/v1/embeddings", json.dumps({"input": "fine"}).encode()
    )
    assert status == 200


async def test_unknown_upstream_404(stack: Stack) -> None:
    status, _, body = await _post(stack, "/nope/v1/chat/completions", b"{}")
    assert status == 404
    assert json.loads(body)["error"]["code"] == "unknown_upstream"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        pytest.param(f"/{SECRET}/v1/chat/completions", "unknown_upstream", id="upstream-name"),
        pytest.param(f"/openai/v1/files/{SECRET}/%2e%2e/x", "invalid_path", id="dot-segments"),
        pytest.param(
            "/openai/v1/files/" + SECRET.replace("_", "%5F") + "/%2e%2e/x",
            "invalid_path",
            id="percent-encoded",
        ),
    ],
)
async def test_a_path_refused_before_the_check_keeps_its_secret_out(
    stack: Stack, path: str, code: str
) -> None:
    assert stack.gateway.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", stack.gateway.port)
    head = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    writer.write(head.encode())
    answer = await reader.read()
    writer.close()
    assert f'"code":"{code}"'.encode() in answer
    assert SECRET.encode() not in answer
    audit = stack.audit_path.read_text()
    assert SECRET not in audit
    assert SECRET.replace("_", "%5F") not in audit
    assert "[redacted]" in audit


async def test_an_unsupported_content_type_is_not_echoed_when_it_holds_a_secret(
    stack: Stack,
) -> None:
    status, _, raw = await _post(
        stack, "/openai/v1/files", b"x", **{"Content-Type": f"application/{SECRET}"}
    )
    assert status == 415
    assert SECRET not in raw.decode()
    status, _, raw = await _post(stack, "/openai/v1/files", b"x", **{"Content-Type": "image/png"})
    assert status == 415
    assert "'image/png'" in raw.decode()


@pytest.mark.parametrize(
    "path", ["/openai/v1/x/%2e%2e/chat/completions", "/openai/v1/x/../chat/completions"]
)
async def test_dot_segments_refused(stack: Stack, path: str) -> None:
    # A raw request: client libraries would normalise the path before sending.
    assert stack.gateway.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", stack.gateway.port)
    body = json.dumps(_chat("hi")).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    writer.write(head.encode() + body)
    answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"invalid_path" in answer
    assert stack.upstream.received == []


async def test_anthropic_error_shape(stack: Stack) -> None:
    status, _, body = await _post(stack, "/anthropic/v1/messages", b"{not json")
    assert status == 400
    parsed = json.loads(body)
    assert parsed["type"] == "error"
    assert parsed["error"]["type"] == "invalid_request_error"


async def test_hop_by_hop_headers_not_forwarded(stack: Stack) -> None:
    status, _, _ = await _post(
        stack,
        CHAT,
        json.dumps(_chat("hi")).encode(),
        Connection="keep-alive, x-private",
        **{"x-private": "1", "x-reefgate-team": "a", "x-kept": "yes"},
    )
    assert status == 200
    got = stack.upstream.received[0].headers
    assert "x-private" not in got and "x-reefgate-team" not in got
    assert got["x-kept"] == "yes"
    # The gateway reads every answer before the client does, so it asks for them as sent.
    assert got["accept-encoding"] == "identity"


# -- teams and key custody --


async def test_no_team_401(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(
        teams={"payments": Team(match=Match(keys_env=["PAY_KEY"]))}, env={"PAY_KEY": "rg-pay-123"}
    )
    status, _, body = await _post(
        stack, CHAT, json.dumps(_chat("hi")).encode(), Authorization="Bearer other"
    )
    assert status == 401
    assert json.loads(body)["error"]["type"] == "authentication_error"
    status, _, _ = await _post(
        stack, CHAT, json.dumps(_chat("hi")).encode(), Authorization="Bearer rg-pay-123"
    )
    assert status == 200
    # The gateway key is never forwarded upstream.
    assert "authorization" not in stack.upstream.received[0].headers


async def test_key_custody_replaces_credentials(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(
        teams={
            "payments": Team(
                match=Match(keys_env=["PAY_KEY"]),
                credentials={"anthropic": Credential(api_key_env="REAL_ANTHROPIC")},
            ),
            "default": Team(default=True, upstreams=["openai"]),
        },
        env={"PAY_KEY": "rg-pay-123", "REAL_ANTHROPIC": "real-provider-key"},
    )
    msg = json.dumps(
        {"model": "claude", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    status, _, _ = await _post(stack, "/anthropic/v1/messages", msg, **{"x-api-key": "rg-pay-123"})
    assert status == 200
    got = stack.upstream.received[0].headers
    assert got["x-api-key"] == "real-provider-key"
    assert "authorization" not in got
    # The default team may not use anthropic at all.
    status, headers, _ = await _post(
        stack, "/anthropic/v1/messages", msg, **{"x-api-key": "someone-else"}
    )
    assert status == 403
    assert headers["x-reefgate-category"] == "upstream_not_allowed"


async def test_team_by_header_and_cidr(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(
        teams={
            "blue": Team(match=Match(headers={"X-Team": "blue"})),
            "local": Team(match=Match(source_cidrs=["127.0.0.0/8"])),
        }
    )
    await _post(stack, CHAT, json.dumps(_chat("hi")).encode(), **{"X-Team": "blue"})
    await _post(stack, CHAT, json.dumps(_chat("hi")).encode())
    teams = [
        json.loads(line)["event"]["payload"]["team"]
        for line in stack.audit_path.read_text().splitlines()
    ]
    assert teams == ["blue", "local"]


# -- upstream failures --


async def test_upstream_unreachable_502(make_stack: StackFactory) -> None:
    # The port stays bound, never listening, for the whole test: a port found
    # free and then released could be handed to a server this test starts (CI
    # once saw its own fake upstream answer 404 there).
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{held.getsockname()[1]}"
        stack: Stack = await make_stack(upstreams={"openai": Upstream(base_url=dead)})
        status, _, body = await _post(stack, CHAT, json.dumps(_chat("hi")).encode())
    assert status == 502
    assert json.loads(body)["error"]["code"] == "upstream_unreachable"


async def test_upstream_timeout_504(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(
        FakeUpstream(delay=2.0), upstream_options={"read_timeout_s": 0.2}
    )
    status, _, body = await _post(stack, CHAT, json.dumps(_chat("hi")).encode())
    assert status == 504
    assert json.loads(body)["error"]["code"] == "upstream_timeout"


async def test_mid_stream_failure_gives_error_event(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(FakeUpstream(die_after_events=2))
    body = json.dumps({**_chat("hi"), "stream": True}).encode()
    async with (
        aiohttp.ClientSession() as s,
        s.post(stack.url + CHAT, data=body, headers={"Content-Type": "application/json"}) as r,
    ):
        assert r.status == 200
        text = (await asyncio.wait_for(r.read(), 5)).decode()
    assert text.count("chat.completion.chunk") == 2
    assert '"error"' in text


async def test_a_client_gone_mid_stream_is_client_closed_not_an_upstream_failure(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aiohttp.client_exceptions import ClientConnectionResetError

    write = web.StreamResponse.write
    wrote: set[int] = set()

    async def gone_after_first(self: web.StreamResponse, data: bytes) -> None:
        # What aiohttp raises when the client's transport has closed; only the
        # gateway's answers carry the request id, the fake upstream's do not.
        if "x-reefgate-request-id" in self.headers:
            if id(self) in wrote:
                raise ClientConnectionResetError("Cannot write to closing transport")
            wrote.add(id(self))
        await write(self, data)

    monkeypatch.setattr(web.StreamResponse, "write", gone_after_first)
    body = json.dumps({**_chat("hi"), "stream": True}).encode()
    async with (
        aiohttp.ClientSession() as s,
        s.post(stack.url + CHAT, data=body, headers={"Content-Type": "application/json"}) as r,
    ):
        assert r.status == 200
        with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
            await asyncio.wait_for(r.read(), 5)
    monkeypatch.undo()
    [entry] = [json.loads(line) for line in stack.audit_path.read_text().splitlines()]
    payload = entry["event"]["payload"]
    assert (payload["status"], payload["outcome"]) == (200, "client_closed")
    await _alive(stack)


async def test_client_disconnect_cancels_upstream(make_stack: StackFactory) -> None:
    fake = FakeUpstream(delay=30.0)
    stack: Stack = await make_stack(fake)
    async with aiohttp.ClientSession() as s:
        with pytest.raises(asyncio.TimeoutError):
            async with s.post(
                stack.url + CHAT,
                data=json.dumps(_chat("hi")).encode(),
                headers={"Content-Type": "application/json"},
                timeout=aiohttp.ClientTimeout(total=0.3),
            ) as r:
                await r.read()
    for _ in range(50):
        if stack.audit_path.exists() and "client_closed" in stack.audit_path.read_text():
            break
        await asyncio.sleep(0.05)
    assert "client_closed" in stack.audit_path.read_text()


async def test_metrics_and_health(stack: Stack) -> None:
    await _post(stack, CHAT, json.dumps(_chat(SECRET)).encode())
    await _post(stack, CHAT, json.dumps(_chat("fine")).encode())
    async with aiohttp.ClientSession() as s:
        async with s.get(stack.url + "/metrics") as r:
            text = await r.text()
        async with s.get(stack.url + "/healthz") as r:
            assert r.status == 200
        async with s.get(stack.url + "/readyz") as r:
            assert r.status == 200
    requests = (
        'reefgate_requests_total{category="%s",decision="%s",team="default",upstream="openai"}'
    )
    assert requests % ("secret", "deny") + " 1.0" in text
    assert requests % ("none", "allow") + " 1.0" in text
    scanned = [
        line for line in text.splitlines() if line.startswith("reefgate_bytes_scanned_total")
    ]
    assert float(scanned[0].split()[-1]) > 0


# -- failures inside the guard path --


@pytest.mark.parametrize("stage", ["secret scan", "injection detector", "adapter"])
async def test_a_failing_guard_stage_denies_as_guard_failure(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, stage: str
) -> None:
    from gateway.guard.detectors import injection, secrets
    from gateway.proxy import reverse

    def broken(*args: object) -> object:
        # The message quotes the payload, as a library's error might.
        raise ValueError(f"cannot handle {SECRET}")

    if stage == "secret scan":
        monkeypatch.setattr(secrets, "scan", broken)
    elif stage == "injection detector":
        monkeypatch.setattr(injection, "assess", broken)
    else:
        monkeypatch.setattr(reverse, "request_segments", broken)
    body = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": "look this up"},
            {"role": "tool", "tool_call_id": "call_1", "content": "the weather is fine"},
        ],
    }
    status, headers, raw = await _post(stack, CHAT, json.dumps(body).encode())
    assert status == 403
    assert headers["x-reefgate-decision"] == "deny"
    assert headers["x-reefgate-category"] == "guard_failure"
    error = json.loads(raw)["error"]
    assert error["code"] == "guard_failure"
    assert stack.upstream.received == []
    [entry] = [json.loads(line) for line in stack.audit_path.read_text().splitlines()]
    payload = entry["event"]["payload"]
    assert (payload["decision"], payload["category"], payload["status"]) == (
        "deny",
        "guard_failure",
        403,
    )
    assert "ValueError" in caplog.text
    assert SECRET not in caplog.text
    assert SECRET not in stack.audit_path.read_text()
    monkeypatch.undo()
    await _alive(stack)


@pytest.mark.parametrize(
    ("stage", "decision", "category"),
    [
        # Before the verdict (the decoding of a path with an escape): nothing
        # was judged, so the entry must not say allow. After it: the sending
        # of the request upstream.
        pytest.param("unquote", "error", "internal_error", id="before-the-verdict"),
        pytest.param("request", "allow", "none", id="after-the-verdict"),
    ],
)
async def test_an_unexpected_error_is_a_provider_shaped_500_and_audited(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, stage: str, decision: str, category: str
) -> None:
    from gateway.proxy import reverse
    from gateway.proxy.origin import Origins

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError(f"{stage} broke")

    monkeypatch.setattr(reverse if stage == "unquote" else Origins, stage, broken)
    # A path with an escape, which only the decoding before the verdict reads.
    path = CHAT + "%20" if stage == "unquote" else CHAT
    status, headers, raw = await _post(stack, path, json.dumps(_chat("hello")).encode())
    assert status == 500
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(raw)["error"]["code"] == "internal_error"
    assert "broke" not in raw.decode()
    assert stack.upstream.received == []
    [entry] = [json.loads(line) for line in stack.audit_path.read_text().splitlines()]
    payload = entry["event"]["payload"]
    assert (payload["decision"], payload["category"], payload["status"], payload["outcome"]) == (
        decision,
        category,
        500,
        "internal_error",
    )
    monkeypatch.undo()
    await _alive(stack)


# -- a broken audit log --


async def test_requests_are_refused_while_the_audit_log_cannot_be_written(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.app import AUDIT
    from gateway.observe import audit as audit_module
    from gateway.observe.audit import AuditLogError, verify
    from gateway.proxy.middleware import LEDGER

    app = stack.gateway.app
    monkeypatch.setattr(app[LEDGER], "audit_retry_s", 0.0)

    def disk_full(fd: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    def still_broken() -> None:
        raise AuditLogError("cannot open")

    monkeypatch.setattr(audit_module, "_write_all", disk_full)
    # The request whose entry fails was already answered; it is not undone.
    status, _, _ = await _post(stack, CHAT, json.dumps(_chat("first")).encode())
    assert status == 200
    assert app[AUDIT].failed is not None
    monkeypatch.setattr(app[AUDIT], "open", still_broken)
    status, _, raw = await _post(stack, CHAT, json.dumps(_chat("second")).encode())
    assert status == 503
    assert json.loads(raw)["error"]["code"] == "audit_unavailable"
    assert len(stack.upstream.received) == 1
    async with aiohttp.ClientSession() as s, s.get(stack.url + "/readyz") as r:
        assert r.status == 503
    # Space again: the next request reopens the log, which carries on the chain.
    monkeypatch.undo()
    monkeypatch.setattr(app[LEDGER], "audit_retry_s", 0.0)
    status, _, _ = await _post(stack, CHAT, json.dumps(_chat("third")).encode())
    assert status == 200
    assert len(stack.upstream.received) == 2
    assert app[AUDIT].failed is None
    result = verify(stack.audit_path)
    assert result.ok, result.error
    assert result.entries == 1
