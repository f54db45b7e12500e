"""A team's detection controls through the official SDKs: allowances, custom rules, redact mode."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import openai
import pytest

from gateway.config.models import (
    Allow,
    Audit,
    CredentialPath,
    CustomRule,
    Detectors,
    Outbound,
    Team,
)
from gateway.guard.findings import Fingerprinter
from gateway.observe.audit import fingerprint_key
from tests.conftest import Stack, StackFactory

# Built by concatenation so this file does not itself look like it holds a key.
GITHUB_PAT = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
OPENAI_KEY = "sk-proj-" + "Zq8RmT2vXk9LwN4bY7cHd3Jf6Gp1Ks5Ua0EiOeQr" + "T3BlbkFJ" + "a8Rn2Wq5Zx7Kc"
AWS_EXAMPLE = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documented example key id
AWS_REAL_LOOKING = "AKIA" + "Z3MFL7XQ2RBN4WPE"


def _openai(stack: Stack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="agent", max_retries=0)


def _anthropic(stack: Stack) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=f"{stack.url}/anthropic", api_key="agent", max_retries=0
    )


def _records(stack: Stack) -> list[dict[str, Any]]:
    lines = stack.audit_path.read_text().splitlines()
    return [json.loads(line)["event"]["payload"] for line in lines]


async def _team(make_stack: StackFactory, **settings: Any) -> Stack:
    stack: Stack = await make_stack(teams={"default": Team(default=True, **settings)})
    return stack


async def _chat(stack: Stack, text: str) -> str:
    completion = await _openai(stack).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
    )
    return completion.choices[0].message.content or ""


# -- allowances --


async def test_allow_patterns_lets_a_documented_example_key_through(
    make_stack: StackFactory,
) -> None:
    stack = await _team(make_stack, allow=Allow(patterns=[r"AKIA[A-Z0-9]{9}EXAMPLE"]))
    assert await _chat(stack, f"the docs use {AWS_EXAMPLE} as the key id") == "hello from upstream"
    assert AWS_EXAMPLE in stack.upstream.received[0].body.decode()
    [record] = _records(stack)
    assert record["decision"] == "allow"
    [allowed] = record["allowed"]
    assert allowed["kind"] == "aws_access_key"
    assert allowed["rule"] == "allow.patterns[0]"
    assert AWS_EXAMPLE not in stack.audit_path.read_text()
    # The pattern must match the whole value: a real-looking key id still denies.
    with pytest.raises(openai.PermissionDeniedError):
        await _chat(stack, f"and the real one is {AWS_REAL_LOOKING}")
    assert len(stack.upstream.received) == 1


async def test_allow_fingerprints_as_the_audit_writes_them(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    # The deployment's key is made on first start; made here first, the stack reads it.
    key = fingerprint_key(Audit(path=tmp_path / "audit.jsonl"), {})
    fingerprint = Fingerprinter(key)(GITHUB_PAT)
    stack = await _team(make_stack, allow=Allow(fingerprints=[fingerprint]))
    assert await _chat(stack, f"test token {GITHUB_PAT}") == "hello from upstream"
    [record] = _records(stack)
    assert record["allowed"] == [
        {
            "kind": "github_token",
            "fingerprint": fingerprint,
            "where": "message 0 (role user, messages[0].content)",
            "rule": "allow.fingerprints",
        }
    ]
    # Any other secret next to it still denies the request.
    with pytest.raises(openai.PermissionDeniedError):
        await _chat(stack, f"test token {GITHUB_PAT}, and {OPENAI_KEY}")
    denied = _records(stack)[-1]
    assert denied["decision"] == "deny"
    assert [f["kind"] for f in denied["findings"]] == ["openai_api_key"]


async def test_credential_path_admits_an_mcp_header_on_responses(make_stack: StackFactory) -> None:
    allow = Allow(
        credential_paths=[CredentialPath(path="tools[*].headers", kinds=["openai_api_key"])]
    )
    stack = await _team(make_stack, allow=allow)
    tools: Any = [
        {
            "type": "mcp",
            "server_label": "docs",
            "server_url": "https://mcp.example.com/sse",
            "headers": {"Authorization": f"Bearer {OPENAI_KEY}"},
            "require_approval": "never",
        }
    ]
    response = await _openai(stack).responses.create(
        model="gpt-4.1", input="search the docs", tools=tools
    )
    assert response.output_text == "hello from upstream"
    sent = json.loads(stack.upstream.received[0].body)
    assert sent["tools"][0]["headers"]["Authorization"] == f"Bearer {OPENAI_KEY}"
    assert _records(stack)[0]["allowed"][0]["rule"] == "allow.credential_paths[0]"
    # The same key anywhere else is still a leak.
    with pytest.raises(openai.PermissionDeniedError):
        await _openai(stack).responses.create(
            model="gpt-4.1", input=f"the key is {OPENAI_KEY}", tools=tools
        )
    # And a kind the path does not list is denied there too.
    tools[0]["headers"]["Authorization"] = f"token {GITHUB_PAT}"
    with pytest.raises(openai.PermissionDeniedError):
        await _openai(stack).responses.create(model="gpt-4.1", input="search", tools=tools)
    assert len(stack.upstream.received) == 1


async def test_credential_path_admits_an_anthropic_mcp_token(make_stack: StackFactory) -> None:
    path = CredentialPath(
        path="mcp_servers[*].authorization_token", kinds=["github_token"], upstreams=["anthropic"]
    )
    stack = await _team(make_stack, allow=Allow(credential_paths=[path]))
    servers: Any = [
        {
            "type": "url",
            "url": "https://mcp.example.com/sse",
            "name": "github",
            "authorization_token": GITHUB_PAT,
        }
    ]
    message = await _anthropic(stack).beta.messages.create(
        model="claude-sonnet-4-20250514",
        max_tokens=64,
        messages=[{"role": "user", "content": "list my repos"}],
        mcp_servers=servers,
        betas=["mcp-client-2025-04-04"],
    )
    assert message.content[0].type == "text"
    sent = json.loads(stack.upstream.received[0].body)
    assert sent["mcp_servers"][0]["authorization_token"] == GITHUB_PAT


# -- custom rules --


async def test_custom_rule_denies_a_codename_also_when_encoded(make_stack: StackFactory) -> None:
    rules = [CustomRule(kind="project_falcon", pattern=r"(?i)\bproject[ _-]?falcon\b")]
    stack = await _team(make_stack, detectors=Detectors(custom=rules))
    for text in (
        "Status of Project Falcon: launch moved to May.",
        "decode this: " + base64.b64encode(b"notes on project-falcon launch").decode(),
    ):
        with pytest.raises(openai.PermissionDeniedError) as denied:
            await _chat(stack, text)
        assert "project_falcon" in str(denied.value)
    assert stack.upstream.received == []
    assert await _chat(stack, "the falcon is a bird of prey") == "hello from upstream"
    records = _records(stack)
    assert [r["decision"] for r in records] == ["deny", "deny", "allow"]
    assert records[0]["findings"][0]["kind"] == "project_falcon"


async def test_custom_rule_with_review_holds_the_request(make_stack: StackFactory) -> None:
    rules = [CustomRule(kind="customer_id", pattern=r"\bCUST-[0-9]{8}\b", decision="review")]
    stack = await _team(make_stack, detectors=Detectors(custom=rules))
    # Held as a ticket (the default hold): refused now, with the review to wait for.
    with pytest.raises(openai.PermissionDeniedError) as held:
        await _chat(stack, "refund CUST-00412345 please")
    assert held.value.response.headers["x-reefgate-decision"] == "review"
    assert held.value.response.headers["x-reefgate-review-id"].startswith("rv_")
    assert "CUST-00412345" not in str(held.value)
    assert stack.upstream.received == []
    [record] = _records(stack)
    assert record["decision"] == "review"
    assert record["category"] == "customer_id"


async def test_custom_rules_in_anthropic_messages(make_stack: StackFactory) -> None:
    rules = [CustomRule(kind="internal_host", pattern=r"[a-z0-9-]+\.corp\.example\.net")]
    stack = await _team(make_stack, detectors=Detectors(custom=rules))
    with pytest.raises(anthropic.PermissionDeniedError):
        await _anthropic(stack).messages.create(
            model="claude-sonnet-4-20250514",
            max_tokens=64,
            messages=[{"role": "user", "content": "ssh into build-7.corp.example.net"}],
        )
    assert stack.upstream.received == []


# -- outbound.on_secret: redact --


async def test_redact_sends_the_request_with_markers(make_stack: StackFactory) -> None:
    stack = await _team(make_stack, outbound=Outbound(on_secret="redact"))
    text = f"deploy with {GITHUB_PAT} and keep the rest of this sentence"
    assert await _chat(stack, text) == "hello from upstream"
    sent = json.loads(stack.upstream.received[0].body)
    assert sent["messages"][0]["content"] == (
        "deploy with [REDACTED:github_token] and keep the rest of this sentence"
    )
    [record] = _records(stack)
    assert record["decision"] == "allow"
    assert [(r["kind"], r["where"]) for r in record["redacted"]] == [
        ("github_token", "messages[0].content")
    ]
    assert GITHUB_PAT not in stack.audit_path.read_text()


async def test_redact_streams_and_covers_anthropic_and_wrapped_values(
    make_stack: StackFactory,
) -> None:
    rules = [CustomRule(kind="project_falcon", pattern=r"(?i)project falcon")]
    stack = await _team(
        make_stack, outbound=Outbound(on_secret="redact"), detectors=Detectors(custom=rules)
    )
    encoded = base64.b64encode(f"token={OPENAI_KEY}".encode()).decode()
    async with _anthropic(stack).messages.stream(
        model="claude-sonnet-4-20250514",
        max_tokens=64,
        system=f"Project Falcon notes. Config blob: {encoded}",
        messages=[{"role": "user", "content": [{"type": "text", "text": f"use {OPENAI_KEY}"}]}],
    ) as stream:
        assert "".join([t async for t in stream.text_stream]) == "hello from upstream"
    body = stack.upstream.received[0].body.decode()
    assert OPENAI_KEY not in body and encoded not in body and "Falcon" not in body
    sent = json.loads(body)
    assert sent["messages"][0]["content"][0]["text"] == "use [REDACTED:openai_api_key]"
    assert "[REDACTED:project_falcon]" in sent["system"]
    [record] = _records(stack)
    assert {r["where"] for r in record["redacted"]} == {"system", "messages[0].content[0].text"}


async def test_redact_cannot_rewrite_a_header_so_it_still_denies(make_stack: StackFactory) -> None:
    stack = await _team(make_stack, outbound=Outbound(on_secret="redact"))
    client = openai.AsyncOpenAI(
        base_url=f"{stack.url}/openai/v1",
        api_key="agent",
        max_retries=0,
        default_headers={"x-debug-token": GITHUB_PAT},
    )
    with pytest.raises(openai.PermissionDeniedError):
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"and {OPENAI_KEY}"}]
        )
    assert stack.upstream.received == []


async def test_deny_stays_the_default(make_stack: StackFactory) -> None:
    stack = await _team(make_stack)
    with pytest.raises(openai.PermissionDeniedError):
        await _chat(stack, f"deploy with {GITHUB_PAT}")
    assert stack.upstream.received == []


async def test_redact_sends_a_compressed_body_plain(make_stack: StackFactory) -> None:
    stack = await _team(make_stack, outbound=Outbound(on_secret="redact"))
    payload = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": GITHUB_PAT}]}
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{stack.url}/openai/v1/chat/completions",
            data=gzip.compress(json.dumps(payload).encode()),
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        ) as response,
    ):
        assert response.status == 200
        assert response.headers["x-reefgate-decision"] == "allow"
    [got] = stack.upstream.received
    assert "content-encoding" not in got.headers
    assert json.loads(got.body)["messages"][0]["content"] == "[REDACTED:github_token]"


async def test_a_key_cannot_pass_for_a_credential_path(make_stack: StackFactory) -> None:
    allow = Allow(
        credential_paths=[CredentialPath(path="tools[*].headers", kinds=["openai_api_key"])]
    )
    stack = await _team(make_stack, allow=allow, outbound=Outbound(on_secret="redact"))
    forged: Any = {"tools[0].headers": {"Authorization": f"Bearer {OPENAI_KEY}"}}
    response = await _openai(stack).responses.create(
        model="gpt-4.1", input="hello", extra_body=forged
    )
    assert response.output_text == "hello from upstream"
    sent = stack.upstream.received[0].body.decode()
    assert OPENAI_KEY not in sent
    assert "[REDACTED:openai_api_key]" in sent
    [record] = _records(stack)
    assert "allowed" not in record
    assert [r["kind"] for r in record["redacted"]] == ["openai_api_key"]
