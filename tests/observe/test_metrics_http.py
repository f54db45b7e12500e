"""/metrics after real requests: each series appears, with the labels of what happened."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import openai

from gateway.app import REVIEWS
from gateway.config.models import Classifier, Guard, Match, Team, Tools
from tests.conftest import Stack, StackFactory
from tests.fakes import FakeUpstream
from tests.guard.fake_classifier import PINNED, FakeClassifier
from tests.replies import Call

CHAT = "/openai/v1/chat/completions"
SHELL_TOOL: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


async def _scrape(stack: Stack) -> str:
    async with aiohttp.ClientSession() as s, s.get(stack.url + "/metrics") as r:
        assert r.status == 200
        return await r.text()


def _value(text: str, sample: str) -> float | None:
    """The value of one sample, named with its labels in sorted order as exposed."""
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    return None


def _requests(team: str, upstream: str, decision: str, category: str) -> str:
    return (
        f'reefgate_requests_total{{category="{category}",decision="{decision}",'
        f'team="{team}",upstream="{upstream}"}}'
    )


async def _post(stack: Stack, path: str, body: object, **headers: str) -> int:
    async with (
        aiohttp.ClientSession() as s,
        s.post(stack.url + path, json=body, headers=headers) as r,
    ):
        await r.read()
        return r.status


def _chat(text: str, **extra: object) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}], **extra}


def _client(stack: Stack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="agent", max_retries=0)


async def test_requests_by_team_upstream_decision_and_category(make_stack: StackFactory) -> None:
    teams = {
        "payments": Team(match=Match(headers={"x-team": "payments"})),
        "default": Team(default=True),
    }
    stack: Stack = await make_stack(teams=teams)
    assert await _post(stack, CHAT, _chat("hello"), **{"x-team": "payments"}) == 200
    secret = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    assert await _post(stack, CHAT, _chat(f"key {secret}"), **{"x-team": "payments"}) == 403
    assert await _post(stack, CHAT, _chat("hello")) == 200
    assert await _post(stack, "/nowhere/v1/chat", _chat("hello")) == 404
    text = await _scrape(stack)
    assert _value(text, _requests("payments", "openai", "allow", "none")) == 1.0
    assert _value(text, _requests("payments", "openai", "deny", "secret")) == 1.0
    assert _value(text, _requests("default", "openai", "allow", "none")) == 1.0
    # Refused before a team was known, for an upstream that does not exist.
    assert _value(text, _requests("none", "unknown", "error", "unknown_upstream")) == 1.0
    assert secret not in text


async def test_guard_and_upstream_latency_for_whole_and_streamed_answers(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack()
    assert await _post(stack, CHAT, _chat("hello")) == 200
    assert await _post(stack, CHAT, _chat("hello again", stream=True)) == 200
    # Denied before any upstream call: in the guard histogram only.
    secret = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    assert await _post(stack, CHAT, _chat(f"key {secret}")) == 403
    text = await _scrape(stack)
    assert _value(text, "reefgate_guard_seconds_count") == 3.0
    assert _value(text, 'reefgate_upstream_seconds_count{upstream="openai"}') == 2.0
    assert _value(text, 'reefgate_upstream_seconds_bucket{le="+Inf",upstream="openai"}') == 2.0
    upstream_sum = _value(text, 'reefgate_upstream_seconds_sum{upstream="openai"}')
    assert upstream_sum is not None and upstream_sum > 0
    assert _value(text, 'reefgate_upstream_seconds_count{upstream="anthropic"}') is None
    # The audit entries carry the same measure, for the streamed answer too.
    entries = [
        json.loads(line)["event"]["payload"] for line in stack.audit_path.read_text().splitlines()
    ]
    assert [e.get("upstream_ms") is not None for e in entries] == [True, True, False]


async def test_verdict_cache_hits_and_misses(make_stack: StackFactory, aiohttp_server: Any) -> None:
    server = await aiohttp_server(FakeClassifier().app())
    classifier = Classifier(
        provider="openai",
        base_url=str(server.make_url("")).rstrip("/"),
        pinned_model=PINNED,
        api_key_env="GUARD_KEY",
    )
    stack: Stack = await make_stack(
        guard=Guard(classifier=classifier), env={"GUARD_KEY": "guard-secret-key"}
    )
    before = await _scrape(stack)
    for name in ("hits", "misses"):
        for cache in ("floor", "classifier"):
            sample = f'reefgate_verdict_cache_{name}_total{{cache="{cache}"}}'
            assert _value(before, sample) == 0.0
    assert await _post(stack, CHAT, _chat("the same words")) == 200
    first = await _scrape(stack)
    floor_misses = _value(first, 'reefgate_verdict_cache_misses_total{cache="floor"}')
    classifier_misses = _value(first, 'reefgate_verdict_cache_misses_total{cache="classifier"}')
    assert floor_misses is not None and floor_misses > 0
    assert classifier_misses is not None and classifier_misses > 0
    # The same request again: every text and every verdict is in the caches.
    assert await _post(stack, CHAT, _chat("the same words")) == 200
    second = await _scrape(stack)
    assert _value(second, 'reefgate_verdict_cache_misses_total{cache="floor"}') == floor_misses
    assert (
        _value(second, 'reefgate_verdict_cache_misses_total{cache="classifier"}')
        == classifier_misses
    )
    assert _value(second, 'reefgate_verdict_cache_hits_total{cache="floor"}') == floor_misses
    assert (
        _value(second, 'reefgate_verdict_cache_hits_total{cache="classifier"}') == classifier_misses
    )


async def test_pending_reviews_per_team(make_stack: StackFactory) -> None:
    teams = {
        "ops": Team(default=True, tools=Tools(review=["deploy_*"])),
        "payments": Team(match=Match(headers={"x-team": "payments"})),
    }
    fake = FakeUpstream(reply=("On it.", [Call("deploy_prod", '{"service": "api"}')]))
    stack: Stack = await make_stack(fake, teams=teams)
    text = await _scrape(stack)
    assert _value(text, 'reefgate_reviews_pending{team="ops"}') == 0.0
    assert _value(text, 'reefgate_reviews_pending{team="payments"}') == 0.0
    completion = await _client(stack).chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "ship it"}],
        tools=SHELL_TOOL,
    )
    assert "waiting for a reviewer" in (completion.choices[0].message.content or "")
    text = await _scrape(stack)
    assert _value(text, 'reefgate_reviews_pending{team="ops"}') == 1.0
    assert _value(text, 'reefgate_reviews_pending{team="payments"}') == 0.0
    reviews = stack.gateway.app[REVIEWS]
    [review] = await reviews.list(status="pending")
    await reviews.decide(review.id, approve=True, reviewer="test")
    text = await _scrape(stack)
    assert _value(text, 'reefgate_reviews_pending{team="ops"}') == 0.0


async def test_breaker_trips_are_counted(make_stack: StackFactory) -> None:
    fake = FakeUpstream(reply=("On it.", [Call.shell("rm -rf / --no-preserve-root")]))
    stack: Stack = await make_stack(fake)
    client = _client(stack)
    for _ in range(4):
        await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "tidy up please"}],
            tools=SHELL_TOOL,
        )
    text = await _scrape(stack)
    # Three denials in a row trip the turn's breaker once; the fourth call meets it tripped.
    assert _value(text, "reefgate_breaker_trips_total") == 1.0
    assert _value(text, 'reefgate_tool_calls_total{outcome="deny",rule="rules"}') == 3.0
    assert _value(text, 'reefgate_tool_calls_total{outcome="deny",rule="breaker"}') == 1.0
