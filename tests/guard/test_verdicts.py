"""Verdict admission against the Reef reference vectors, through the real HTTP path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.guard.classifiers.client import Classifier
from gateway.guard.classifiers.providers import AnthropicMessages, OpenAIResponses, Provider
from gateway.guard.verdict import (
    GuardRequest,
    admit,
    assert_pinned_model,
    effective_policy_version,
    guard_failure,
)
from tests.vectors import load_cases

CASES = load_cases("verdicts.json")
PROVIDER_CASES = [c for c in CASES if c.get("provider") and c["expect"] != "construction_error"]
ADMIT_CASES = [c for c in CASES if c.get("kind") == "admitVerdict"]


def _body(response: dict[str, Any]) -> str:
    if "body_text" in response:
        text: str = response["body_text"]
        return text
    recipe = response["body_text_recipe"]
    return str(recipe["prefix"] + recipe["pad_char"] * recipe["pad_count"] + recipe["suffix"])


class FakeProvider:
    """Answers every request with the case's recorded provider response."""

    def __init__(self) -> None:
        self.response: dict[str, Any] = {}
        self.requests: list[tuple[str, dict[str, str], Any]] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append(
            (request.path, {k.lower(): v for k, v in request.headers.items()}, await request.json())
        )
        if self.response.get("behavior") == "never_resolves":
            await asyncio.sleep(30)
        return web.Response(
            status=self.response["status"],
            body=_body(self.response).encode(),
            content_type="application/json",
        )


@pytest.fixture
async def provider_server() -> AsyncIterator[tuple[FakeProvider, str]]:
    fake = FakeProvider()
    server = TestServer(fake.app())
    await server.start_server()
    yield fake, str(server.make_url("")).rstrip("/")
    await server.close()


def _provider(case: dict[str, Any], base: str) -> Provider:
    cls = OpenAIResponses if case["provider"] == "openai" else AnthropicMessages
    return cls(base, case["pinned_model"], "test-api-key")


@pytest.mark.parametrize("case", PROVIDER_CASES, ids=lambda c: f"{c['id']} {c['name']}")
async def test_provider_vectors(
    case: dict[str, Any], provider_server: tuple[FakeProvider, str]
) -> None:
    fake, base = provider_server
    fake.response = case["provider_response"]
    req = case["guard_request"]
    request = GuardRequest(
        req["direction"], req["source"], req["destination"], req["text"], req["policyVersion"]
    )
    async with aiohttp.ClientSession() as session:
        classifier = Classifier(_provider(case, base), session, case["timeout_ms"])
        verdict = await classifier.classify(request, None)
    assert verdict.as_dict() == case["verdict"]
    # What we sent has the reference's shape: same endpoint, headers, and body
    # keys; the untrusted request travels only in the input, never the instructions.
    [(path, headers, body)] = fake.requests
    expected = case["provider_request"]
    assert expected["url"].endswith(path)
    for name, value in expected["headers"].items():
        assert headers[name] == value
    ref = expected["body_json"]
    assert set(body) == set(ref)
    if case["provider"] == "openai":
        assert body["input"] == ref["input"]
        assert body["text"]["format"]["schema"] == ref["text"]["format"]["schema"]
        assert body["text"]["format"]["strict"] is True
        assert {k: body[k] for k in ("model", "store", "background", "tools")} == {
            k: ref[k] for k in ("model", "store", "background", "tools")
        }
        instructions = body["instructions"]
    else:
        assert body["messages"] == ref["messages"]
        assert body["output_config"] == ref["output_config"]
        assert body["max_tokens"] == 512
        instructions = body["system"]
    assert req["text"] not in instructions
    assert (
        instructions.endswith(f"exactly {json.dumps(req['policyVersion'])}.")
        or "policyVersion to exactly" in instructions
    )


@pytest.mark.parametrize("case", ADMIT_CASES, ids=lambda c: f"{c['id']} {c['name']}")
def test_admit_vectors(case: dict[str, Any]) -> None:
    verdict = admit(case["raw"], case["pinned_model"], case["policy_version"])
    assert verdict.as_dict() == case["verdict"]


def test_floating_alias_refused_at_construction() -> None:
    [case] = [c for c in CASES if c["expect"] == "construction_error"]
    with pytest.raises(ValueError, match="dated snapshot"):
        assert_pinned_model(case["pinned_model"])


@pytest.mark.parametrize(
    ("model", "ok"),
    [
        ("gpt-4.1-2025-04-14", True),
        ("claude-haiku-4-5-20251001", True),
        ("gpt-5.6-terra", True),
        ("gpt-5.6", False),
        ("gpt-4.1", False),
        ("claude-3-5-sonnet-latest", False),
        ("model-20250101\n", False),
        ("model-２０２５０１０１", False),
    ],
)
def test_pinned_models(model: str, ok: bool) -> None:
    if ok:
        assert_pinned_model(model)
    else:
        with pytest.raises(ValueError):
            assert_pinned_model(model)


def test_effective_policy_version_vectors() -> None:
    cases = [
        c for c in load_cases("digests.json") if c.get("kind") == "effectiveGuardPolicyVersion"
    ]
    assert cases
    for case in cases:
        if case["expect"] != "ok":
            continue
        rules = case["rules"] or {}
        got = effective_policy_version(case["base"], rules.get("outbound"), rules.get("inbound"))
        assert got == case["effective_full"], case["id"]


def test_guard_failure_shape() -> None:
    assert guard_failure("m-20250101", "reef-v1").as_dict() == {
        "decision": "deny",
        "category": "guard_failure",
        "reason": "Guard unavailable or invalid.",
        "model": "m-20250101",
        "policyVersion": "reef-v1",
    }


def test_segment_key_is_the_canonical_digest() -> None:
    import random

    from gateway.canonical import digest
    from gateway.guard.pipeline import segment_key

    rng = random.Random(7)
    alphabet = [
        "a",
        "Z",
        "0",
        '"',
        "\\",
        "\n",
        "\t",
        "\x00",
        "\x1f",
        "\x7f",
        "é",
        "\u2028",
        "😀",
        "\ud800",
        "\udfff",
        "\ufeff",
        " ",
    ]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        pv = rng.choice(["reef-v1", "reef-v1+" + "ab" * 32, "ü"])
        want = digest(
            {"direction": "inbound", "text": text, "policyVersion": pv, "model": "m-20250101"}
        )
        assert segment_key("inbound", text, pv, "m-20250101") == want
