"""The review gate in the request path: held requests, decisions, hold modes, through the SDKs."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from gateway.app import GATE, REVIEWS
from gateway.config.models import Classifier, Guard, Limits, Review, Rules, Team, TeamReview
from gateway.review.gate import Reviews
from gateway.review.model import Review as ReviewRecord
from tests.conftest import Stack, StackFactory
from tests.guard.fake_classifier import PINNED, FakeClassifier

GITHUB_PAT = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
HELD = "please REVIEWME before you send this"


async def _stack(
    make_stack: StackFactory,
    aiohttp_server: Any,
    fake: FakeClassifier,
    *,
    name: str = "audit",
    review: TeamReview | None = None,
    rules: Rules | None = None,
    store: str | None = None,
    limits: Limits | None = None,
    classifier_timeout_ms: int = 10_000,
) -> Stack:
    server = await aiohttp_server(fake.app())
    classifier = Classifier(
        provider="openai",
        base_url=str(server.make_url("")).rstrip("/"),
        pinned_model=PINNED,
        api_key_env="GUARD_KEY",
        timeout_ms=classifier_timeout_ms,
    )
    extra: dict[str, Any] = {}
    if store is not None:
        extra["review"] = Review(store=store)
    if limits is not None:
        extra["limits"] = limits
    stack: Stack = await make_stack(
        name=name,
        guard=Guard(classifier=classifier),
        teams={
            "default": Team(default=True, review=review or TeamReview(), rules=rules or Rules())
        },
        env={"GUARD_KEY": "guard-secret-key"},
        **extra,
    )
    return stack


def _client(stack: Stack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="agent", max_retries=0)


async def _ask(stack: Stack, text: str = HELD, **kwargs: Any) -> str | None:
    completion = await _client(stack).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}], **kwargs
    )
    return completion.choices[0].message.content


def _entries(stack: Stack) -> list[dict[str, Any]]:
    lines = stack.audit_path.read_text().splitlines()
    return [json.loads(line)["event"]["payload"] for line in lines]


def _reviews(stack: Stack) -> Reviews:
    return stack.gateway.app[REVIEWS]


async def _held(stack: Stack, text: str = HELD) -> str:
    with pytest.raises(openai.PermissionDeniedError) as info:
        await _ask(stack, text)
    response = info.value.response
    assert response.headers["x-reefgate-decision"] == "review"
    assert response.headers["x-reefgate-category"] == "review_pending"
    assert response.json()["error"]["code"] == "review_pending"
    return response.headers["x-reefgate-review-id"]


async def test_ticket_a_held_request_passes_once_approved(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    fake = FakeClassifier()
    stack = await _stack(make_stack, aiohttp_server, fake)
    review_id = await _held(stack)
    assert stack.upstream.received == []
    [review] = await _reviews(stack).list(status="pending")
    assert review.id == review_id
    assert (review.team, review.category, review.direction) == (
        "default",
        "test_policy",
        "outbound",
    )
    assert "REVIEWME" in review.excerpt
    calls = len(fake.calls)
    # Still pending: the same answer, and no new classification.
    assert await _held(stack) == review_id
    assert len(fake.calls) == calls
    await _reviews(stack).decide(review_id, approve=True, reviewer="test")
    assert await _ask(stack) == "hello from upstream"
    # Approved: classified once more, afresh, and the review no longer holds it.
    assert len(fake.calls) > calls
    assert len(stack.upstream.received) == 1
    entries = [
        json.loads(line)["event"]["payload"] for line in stack.audit_path.read_text().splitlines()
    ]
    assert [(e["decision"], e.get("review_id")) for e in entries] == [
        ("review", review_id),
        ("review", review_id),
        ("allow", review_id),
    ]


async def test_ticket_a_denied_request_stays_denied(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    stack = await _stack(make_stack, aiohttp_server, FakeClassifier())
    review_id = await _held(stack)
    await _reviews(stack).decide(review_id, approve=False, reviewer="test", note="no")
    with pytest.raises(openai.PermissionDeniedError) as info:
        await _ask(stack)
    assert info.value.response.headers["x-reefgate-category"] == "review_denied"
    assert info.value.response.headers["x-reefgate-review-id"] == review_id
    assert stack.upstream.received == []


async def test_an_approval_does_not_carry_over_to_a_changed_body(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    stack = await _stack(make_stack, aiohttp_server, FakeClassifier())
    first = await _held(stack)
    await _reviews(stack).decide(first, approve=True, reviewer="test")
    second = await _held(stack, HELD + " and one more thing")
    assert second != first
    assert stack.upstream.received == []


async def test_an_approval_does_not_carry_over_to_changed_rules_or_a_restart_loses_nothing(
    make_stack: StackFactory, aiohttp_server: Any, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'shared-reviews.sqlite3'}"
    first = await _stack(make_stack, aiohttp_server, FakeClassifier(), name="first", store=store)
    review_id = await _held(first)
    await first.gateway.close()
    # A restart: the pending review is there, and approving it now works.
    second = await _stack(make_stack, aiohttp_server, FakeClassifier(), name="second", store=store)
    [pending] = await _reviews(second).list(status="pending")
    assert pending.id == review_id
    assert await _held(second) == review_id
    await _reviews(second).decide(review_id, approve=True, reviewer="test")
    assert await _ask(second) == "hello from upstream"
    await second.gateway.close()
    # The operator edits the team's rules: the policy version, and so every
    # approval digest, changes; the approval no longer applies.
    third = await _stack(
        make_stack,
        aiohttp_server,
        FakeClassifier(),
        name="third",
        store=store,
        rules=Rules(outbound="Never share anything about project Falcon."),
    )
    assert await _held(third) != review_id


async def test_a_floor_deny_never_becomes_a_review(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    stack = await _stack(make_stack, aiohttp_server, FakeClassifier())
    with pytest.raises(openai.PermissionDeniedError) as info:
        await _ask(stack, f"{HELD} with {GITHUB_PAT}")
    assert info.value.response.headers["x-reefgate-category"] == "secret"
    assert "x-reefgate-review-id" not in info.value.response.headers
    assert await _reviews(stack).list() == []


async def test_past_max_pending_a_review_is_denied_as_review_capacity(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    stack = await _stack(
        make_stack, aiohttp_server, FakeClassifier(), review=TeamReview(max_pending=1)
    )
    await _held(stack)
    with pytest.raises(openai.PermissionDeniedError) as info:
        await _ask(stack, HELD + " (another one)")
    assert info.value.response.headers["x-reefgate-category"] == "review_capacity"
    assert len(await _reviews(stack).list(status="pending")) == 1


# -- wait: the client's connection is held until a decision or the deadline --


async def _approve_when_pending(stack: Stack, approve: bool = True) -> ReviewRecord:
    reviews = _reviews(stack)
    # The review is made by another task of this loop, through the store: polled.
    while not (waiting := await reviews.list(status="pending")):  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    return await reviews.decide(waiting[0].id, approve=approve, reviewer="test")


async def test_wait_an_approval_releases_the_held_request(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    stack = await _stack(
        make_stack,
        aiohttp_server,
        FakeClassifier(),
        review=TeamReview(hold="wait", hold_timeout_s=30),
    )
    started = time.monotonic()
    answer, decided = await asyncio.gather(_ask(stack), _approve_when_pending(stack))
    assert answer == "hello from upstream"
    assert time.monotonic() - started < 10
    assert decided.status == "approved"
    [entry] = [
        json.loads(line)["event"]["payload"] for line in stack.audit_path.read_text().splitlines()
    ]
    assert (entry["decision"], entry["review_id"]) == ("allow", decided.id)
    assert entry["held_ms"] >= 0


async def test_wait_a_denial_answers_403(make_stack: StackFactory, aiohttp_server: Any) -> None:
    stack = await _stack(
        make_stack,
        aiohttp_server,
        FakeClassifier(),
        review=TeamReview(hold="wait", hold_timeout_s=30),
    )
    results = await asyncio.gather(
        _ask(stack), _approve_when_pending(stack, approve=False), return_exceptions=True
    )
    assert isinstance(results[0], openai.PermissionDeniedError)
    assert results[0].response.headers["x-reefgate-category"] == "review_denied"
    assert stack.upstream.received == []


async def test_wait_at_the_deadline_answers_as_a_ticket(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    stack = await _stack(
        make_stack,
        aiohttp_server,
        FakeClassifier(),
        review=TeamReview(hold="wait", hold_timeout_s=0.3),
    )
    review_id = await _held(stack)
    [review] = await _reviews(stack).list(status="pending")
    assert review.id == review_id


async def test_wait_a_streamed_request_is_kept_alive_then_streams_once_approved(
    make_stack: StackFactory, aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.proxy import reverse

    monkeypatch.setattr(reverse, "HEARTBEAT_S", 0.05)
    stack = await _stack(
        make_stack,
        aiohttp_server,
        FakeClassifier(),
        review=TeamReview(hold="wait", hold_timeout_s=30),
    )

    async def streamed() -> str:
        stream = await _client(stack).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": HELD}], stream=True
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    async def approve_later() -> ReviewRecord:
        # Long enough for heartbeats to flow while the request is held.
        await asyncio.sleep(0.3)
        return await _approve_when_pending(stack)

    text, _ = await asyncio.gather(streamed(), approve_later())
    assert text == "hello from upstream"
    assert len(stack.upstream.received) == 1


async def test_wait_a_streamed_request_ends_with_an_error_event_at_the_deadline(
    make_stack: StackFactory, aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.proxy import reverse

    monkeypatch.setattr(reverse, "HEARTBEAT_S", 0.05)
    stack = await _stack(
        make_stack,
        aiohttp_server,
        FakeClassifier(),
        review=TeamReview(hold="wait", hold_timeout_s=0.3),
    )
    stream = await _client(stack).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": HELD}], stream=True
    )
    with pytest.raises(openai.APIError) as info:
        async for _ in stream:
            pass
    assert "review" in str(info.value)
    assert stack.upstream.received == []


async def test_the_gate_knows_reviews_made_before_a_start(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    stack = await _stack(make_stack, aiohttp_server, FakeClassifier())
    await _held(stack)
    assert stack.gateway.app[GATE].may_know("default")


@pytest.fixture
async def pg_store() -> AsyncIterator[str]:
    import os

    import asyncpg  # type: ignore[import-untyped]

    database = "postgresql://postgres@127.0.0.1:5432/test"
    schema = f"rg_hold_{os.getpid()}_{os.urandom(3).hex()}"
    yield f"{database}?schema={schema}"
    conn = await asyncpg.connect(database)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


async def test_a_replica_keeps_a_request_pending_that_another_replica_held(
    make_stack: StackFactory, aiohttp_server: Any, pg_store: str
) -> None:
    a = await _stack(make_stack, aiohttp_server, FakeClassifier(), name="a", store=pg_store)
    b_classifier = FakeClassifier()
    b = await _stack(make_stack, aiohttp_server, b_classifier, name="b", store=pg_store)
    review_id = await _held(a)
    # b heard of the review (a notification from the store) and keeps the
    # identical request pending without classifying it.
    gate = b.gateway.app[GATE]
    for _ in range(500):
        if gate.may_know("default"):
            break
        await asyncio.sleep(0.01)
    assert await _held(b) == review_id
    assert b_classifier.calls == []


# -- the waits of inspection are held to its time limit --


async def _limited_stack(
    make_stack: StackFactory, aiohttp_server: Any, fake: FakeClassifier
) -> Stack:
    # The classifier's own timeout is longer than the inspection's limit: that
    # limit is what must stop it.
    return await _stack(
        make_stack,
        aiohttp_server,
        fake,
        limits=Limits(inspect_timeout_ms=300),
        classifier_timeout_ms=30_000,
    )


async def _guard_failure(stack: Stack, text: str) -> float:
    started = time.monotonic()
    with pytest.raises(openai.PermissionDeniedError) as info:
        await _ask(stack, text)
    assert info.value.response.headers["x-reefgate-category"] == "guard_failure"
    assert stack.upstream.received == []
    return time.monotonic() - started


async def test_a_classifier_that_outlasts_the_inspection_limit_is_a_guard_failure(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    stack = await _limited_stack(make_stack, aiohttp_server, FakeClassifier(failure="timeout"))
    # The fake answers after 5 s; the limit is 0.3 s.
    assert await _guard_failure(stack, "a plain question") < 4


async def test_a_review_store_that_outlasts_the_inspection_limit_is_a_guard_failure(
    make_stack: StackFactory, aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = await _limited_stack(make_stack, aiohttp_server, FakeClassifier())
    gate = stack.gateway.app[GATE]

    async def stalled(review: ReviewRecord) -> ReviewRecord:
        await asyncio.sleep(5)
        return review

    monkeypatch.setattr(gate, "hold", stalled)
    assert await _guard_failure(stack, HELD) < 4
