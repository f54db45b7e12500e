"""The forward proxy: clients configured only with HTTPS_PROXY and the CA file, guarded the same."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import ssl
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from gateway.app import FORWARD
from gateway.config.models import ForwardProxy
from gateway.proxy.certs import Authority, CAError, CAFiles, init_ca
from gateway.proxy.forward import host_allowed, split_authority
from tests.conftest import Stack, StackFactory
from tests.fakes import FakeUpstream

GITHUB_PAT = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


async def _stack(
    make_stack: StackFactory, tmp_path: Path, fake: FakeUpstream | None = None, **forward: Any
) -> tuple[Stack, int, Path]:
    settings = ForwardProxy(
        enabled=True,
        listen={"host": "127.0.0.1", "port": 0},
        intercept={"api.openai.com": "openai", "api.anthropic.com": "anthropic"},
        ca_dir=tmp_path / "ca",
        **forward,
    )
    stack: Stack = await make_stack(fake, forward_proxy=settings)
    proxy = stack.gateway.app[FORWARD]
    return stack, proxy.port, tmp_path / "ca" / "ca.pem"


def _audit(stack: Stack) -> list[dict[str, Any]]:
    return [json.loads(line)["event"] for line in stack.audit_path.read_text().splitlines()]


# -- the certificate authority --


def test_ca_init_makes_a_private_key_and_refuses_to_overwrite(tmp_path: Path) -> None:
    files = init_ca(tmp_path / "ca")
    assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    with pytest.raises(CAError):
        init_ca(tmp_path / "ca")


def test_leaves_are_for_one_name_short_lived_and_chain_to_the_ca(tmp_path: Path) -> None:
    authority = Authority(init_ca(tmp_path), validity_hours=6, cache_size=2)
    leaf = authority.leaf("api.openai.com")
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["api.openai.com"]
    life = leaf.not_valid_after_utc - leaf.not_valid_before_utc
    assert life <= datetime.timedelta(hours=7)
    public = authority.cert.public_key()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    leaf.verify_directly_issued_by(authority.cert)
    # Cached per host, within a bound.
    first = authority.context("api.openai.com")
    assert authority.context("API.openai.com") is first
    authority.context("a.example")
    authority.context("b.example")
    assert authority.context("api.openai.com") is not first
    assert authority.minted == 4


def test_authority_refuses_a_certificate_that_is_not_a_ca(tmp_path: Path) -> None:
    authority = Authority(init_ca(tmp_path / "ca"))
    leaf_dir = tmp_path / "leaf"
    leaf_dir.mkdir()
    from cryptography.hazmat.primitives import serialization

    (leaf_dir / "ca.pem").write_bytes(
        authority.leaf("x.example").public_bytes(serialization.Encoding.PEM)
    )
    (leaf_dir / "ca-key.pem").write_bytes((tmp_path / "ca" / "ca-key.pem").read_bytes())
    with pytest.raises(CAError):
        Authority(CAFiles.in_dir(leaf_dir))


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("api.openai.com:443", ("api.openai.com", 443)),
        ("API.OpenAI.com:8443", ("api.openai.com", 8443)),
        ("[::1]:443", ("::1", 443)),
        ("api.openai.com", None),
        ("api.openai.com:0", None),
        ("api.openai.com:99999", None),
        (":443", None),
        ("[::1]443", None),
    ],
)
def test_connect_targets(target: str, expected: tuple[str, int] | None) -> None:
    assert split_authority(target) == expected


def test_host_patterns() -> None:
    allow = ["pypi.org", "*.github.com"]
    assert host_allowed("pypi.org", allow) and host_allowed("api.github.com", allow)
    assert host_allowed("PyPI.org.", allow)
    assert not host_allowed("github.com", allow)
    assert not host_allowed("evilgithub.com", allow)
    assert not host_allowed("pypi.org.evil.com", allow)


# -- interception: the same pipeline through the tunnel --


async def test_httpx_through_https_proxy_reaches_the_upstream(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack, port, ca = await _stack(make_stack, tmp_path)
    async with httpx.AsyncClient(
        proxy=f"http://127.0.0.1:{port}", verify=ssl.create_default_context(cafile=ca)
    ) as client:
        first = await client.post("https://api.openai.com/v1/chat/completions", json=CHAT)
        # Keep-alive inside the tunnel: a second request on the same connection.
        second = await client.post("https://api.openai.com/v1/chat/completions", json=CHAT)
    assert first.status_code == second.status_code == 200
    assert first.json()["choices"][0]["message"]["content"] == "hello from upstream"
    assert [r.path for r in stack.upstream.received] == ["/v1/chat/completions"] * 2
    assert first.headers["x-reefgate-decision"] == "allow"
    events = _audit(stack)
    tunnels = [e["payload"] for e in events if e["type"] == "tunnel"]
    assert tunnels[0]["category"] == "intercepted" and tunnels[0]["upstream"] == "openai"
    requests = [e["payload"] for e in events if e["type"] == "request"]
    assert [r["upstream"] for r in requests] == ["openai", "openai"]


async def test_a_secret_through_the_tunnel_is_denied(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack, port, ca = await _stack(make_stack, tmp_path)
    body = {**CHAT, "messages": [{"role": "user", "content": f"token {GITHUB_PAT}"}]}
    async with httpx.AsyncClient(
        proxy=f"http://127.0.0.1:{port}", verify=ssl.create_default_context(cafile=ca)
    ) as client:
        answer = await client.post("https://api.openai.com/v1/chat/completions", json=body)
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "secret"
    assert stack.upstream.received == []
    assert GITHUB_PAT not in stack.audit_path.read_text()


async def test_openai_sdk_with_only_the_environment(
    make_stack: StackFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, port, ca = await _stack(make_stack, tmp_path)
    for name in ("OPENAI_BASE_URL", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    client = openai.AsyncOpenAI(api_key="agent-key", max_retries=0)
    completion = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "hello from upstream"
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    pieces = [c.choices[0].delta.content async for c in stream if c.choices]
    assert "".join(p or "" for p in pieces) == "hello from upstream"
    with pytest.raises(openai.PermissionDeniedError):
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": GITHUB_PAT}]
        )
    assert len(stack.upstream.received) == 2
    await client.close()


async def test_curl_through_the_proxy(make_stack: StackFactory, tmp_path: Path) -> None:
    _, port, ca = await _stack(make_stack, tmp_path)
    command = [
        "curl", "-sS", "--proxy", f"http://127.0.0.1:{port}", "--cacert", str(ca),
        "-H", "content-type: application/json", "-d", json.dumps(CHAT),
        "https://api.openai.com/v1/chat/completions",
    ]  # fmt: skip
    done = await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["choices"][0]["message"]["content"] == "hello from upstream"


async def test_an_untrusted_ca_is_refused_by_the_client(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    _, port, _ = await _stack(make_stack, tmp_path)
    async with httpx.AsyncClient(proxy=f"http://127.0.0.1:{port}", verify=True) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get("https://api.openai.com/v1/models")


# -- egress control for every other host --


async def _raw_connect(port: int, target: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    writer.close()
    return head


async def test_egress_deny_refuses_unknown_hosts_and_audits(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack, port, _ = await _stack(make_stack, tmp_path)
    head = await _raw_connect(port, "exfil.example.net:443")
    assert head.startswith(b"HTTP/1.1 403")
    [tunnel] = [e["payload"] for e in _audit(stack) if e["type"] == "tunnel"]
    assert (tunnel["host"], tunnel["decision"], tunnel["category"]) == (
        "exfil.example.net",
        "deny",
        "egress_denied",
    )


async def test_a_secret_in_a_refused_host_name_is_not_audited(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack, port, _ = await _stack(make_stack, tmp_path)
    head = await _raw_connect(port, f"{GITHUB_PAT.lower()}.evil.example:443")
    assert head.startswith(b"HTTP/1.1 403")
    assert GITHUB_PAT.lower() not in stack.audit_path.read_text()


async def test_egress_tunnel_reaches_an_allowed_host_only(
    make_stack: StackFactory, tmp_path: Path, aiohttp_server: Any
) -> None:
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="tunnelled")

    app = web.Application()
    app.router.add_get("/", hello)
    server = await aiohttp_server(app)
    stack, port, _ = await _stack(make_stack, tmp_path, egress="tunnel", allow=["localhost"])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    target = f"localhost:{server.port}"
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    writer.write(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"tunnelled")
    assert (await _raw_connect(port, "127.0.0.2:443")).startswith(b"HTTP/1.1 403")
    outcomes = [e["payload"]["category"] for e in _audit(stack) if e["type"] == "tunnel"]
    assert outcomes == ["tunnelled", "egress_denied"]


async def test_plain_http_follows_the_egress_rule(
    make_stack: StackFactory, tmp_path: Path, aiohttp_server: Any
) -> None:
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text=f"plain {request.method}")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", hello)
    server = await aiohttp_server(app)
    _, port, _ = await _stack(make_stack, tmp_path, egress="tunnel", allow=["localhost"])
    async with httpx.AsyncClient(proxy=f"http://127.0.0.1:{port}") as client:
        allowed = await client.post(f"http://localhost:{server.port}/x", content=b"data")
        refused = await client.get(f"http://127.0.0.2:{server.port}/x")
        intercepted = await client.get("http://api.openai.com/v1/models")
    assert (allowed.status_code, allowed.text) == (200, "plain POST")
    assert refused.status_code == 403 and intercepted.status_code == 403


async def test_malformed_proxy_requests_get_400(make_stack: StackFactory, tmp_path: Path) -> None:
    _, port, _ = await _stack(make_stack, tmp_path)
    for head in (b"CONNECT nonsense HTTP/1.1\r\n\r\n", b"\x16\x03\x01garbage\r\n\r\n"):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head)
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 400")


def test_ca_key_mode_survives_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        files = init_ca(tmp_path / "ca")
    finally:
        os.umask(old)
    assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
    assert ssl.PEM_cert_to_DER_cert(files.cert.read_text())


def test_reefgate_ca_init_and_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import main

    assert main(["ca", "init", str(tmp_path / "ca")]) == 0
    assert stat.S_IMODE((tmp_path / "ca" / "ca-key.pem").stat().st_mode) == 0o600
    assert main(["ca", "init", str(tmp_path / "ca")]) == 1
    config = tmp_path / "config"
    (config / "teams").mkdir(parents=True)
    (config / "gateway.yaml").write_text(
        "forward_proxy:\n"
        "  enabled: true\n"
        "  listen: {host: 0.0.0.0, port: 9788}\n"
        f"  ca_dir: {tmp_path / 'ca'}\n"
        "  intercept: {api.openai.com: openai}\n"
    )
    (config / "teams" / "default.yaml").write_text("default: true\n")
    capsys.readouterr()
    assert main(["ca", "show", "--config", str(config)]) == 0
    shown = capsys.readouterr().out
    cert = tmp_path / "ca" / "ca.pem"
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"):
        assert f"export {name}={cert}" in shown
    assert "export HTTPS_PROXY=http://127.0.0.1:9788" in shown
    assert f"CA certificate: {cert}\n" in shown


async def test_anthropic_sdk_with_only_the_environment(
    make_stack: StackFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anthropic

    stack, port, ca = await _stack(make_stack, tmp_path)
    for name in ("ANTHROPIC_BASE_URL", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    client = anthropic.AsyncAnthropic(api_key="agent-key", max_retries=0)
    message = await client.messages.create(
        model="claude-sonnet-4-20250514",
        max_tokens=16,
        messages=[{"role": "user", "content": "hi"}],
    )
    assert message.content[0].type == "text"
    assert [r.path for r in stack.upstream.received] == ["/v1/messages"]
    with pytest.raises(anthropic.PermissionDeniedError):
        await client.messages.create(
            model="claude-sonnet-4-20250514",
            max_tokens=16,
            messages=[{"role": "user", "content": f"use {GITHUB_PAT}"}],
        )
    await client.close()
