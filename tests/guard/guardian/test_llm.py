"""The optional LLM guardian, against a fake provider, through the gateway."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest
from aiohttp import web

from gateway.config.models import Classifier, Guardian
from gateway.guard.guardian.llm import MAX_TRANSCRIPT_CHARS, guardian_input
from gateway.wire.calls import Conversation, Message, ToolCall
from tests.conftest import Stack, StackFactory
from tests.fakes import FakeUpstream
from tests.replies import Call

PINNED = "gpt-4.1-2025-04-14"
TOOLS: list[Any] = [{"type": "function", "function": {"name": "shell", "parameters": {}}}]


def _assessment(outcome: str, risk: str = "low", authorization: str = "unknown") -> str:
    return json.dumps(
        {
            "risk_level": risk,
            "user_authorization": authorization,
            "outcome": outcome,
            "rationale": f"fake guardian says {outcome}",
        }
    )


@dataclass
class FakeGuardian:
    answer: str = field(default_factory=lambda: _assessment("allow"))
    model: str = PINNED
    status: int = 200
    delay: float = 0.0
    calls: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/responses", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        self.calls.append(await request.json())
        await asyncio.sleep(self.delay)
        envelope = {
            "id": "resp_g",
            "object": "response",
            "model": self.model,
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": self.answer, "annotations": []}],
                }
            ],
        }
        return web.json_response(envelope, status=self.status)


async def _stack(
    make_stack: StackFactory, aiohttp_server: Any, guardian: FakeGuardian, *calls: Call
) -> Stack:
    server = await aiohttp_server(guardian.app())
    classifier = Classifier(
        provider="openai",
        base_url=str(server.make_url("")).rstrip("/"),
        pinned_model=PINNED,
        api_key_env="GUARDIAN_KEY",
        timeout_ms=500,
    )
    stack: Stack = await make_stack(
        FakeUpstream(reply=("On it.", list(calls))),
        guardian=Guardian(classifier=classifier),
        env={"GUARDIAN_KEY": "guardian-key"},
    )
    return stack


async def _calls_released(stack: Stack, prompt: str = "look around") -> tuple[int, str]:
    client = openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="k", max_retries=0)
    completion = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], tools=TOOLS
    )
    message = completion.choices[0].message
    return len(message.tool_calls or ()), message.content or ""


def _audited(stack: Stack) -> list[dict[str, Any]]:
    line = stack.audit_path.read_text().splitlines()[-1]
    calls: list[dict[str, Any]] = json.loads(line)["event"]["payload"]["tool_calls"]
    return calls


async def test_the_llm_guardian_can_deny_what_the_rules_allow(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    guardian = FakeGuardian(answer=_assessment("deny", "medium"))
    stack = await _stack(make_stack, aiohttp_server, guardian, Call.shell("ls -la"))
    released, text = await _calls_released(stack)
    assert released == 0 and "fake guardian says deny" in text
    assert _audited(stack)[0]["rule"] == "llm"
    # The call and the conversation go as data in the input, not in the instructions.
    [asked] = guardian.calls
    assert asked["model"] == PINNED
    assert "ls -la" in asked["input"] and "ls -la" not in asked["instructions"]
    assert json.loads(asked["input"])["last_user_message"] == "look around"


async def test_the_llm_guardian_allows(make_stack: StackFactory, aiohttp_server: Any) -> None:
    stack = await _stack(make_stack, aiohttp_server, FakeGuardian(), Call.shell("ls -la"))
    assert (await _calls_released(stack))[0] == 1
    assert _audited(stack)[0]["rule"] == "llm"


async def test_the_llm_is_not_asked_about_what_the_rules_deny(
    make_stack: StackFactory, aiohttp_server: Any
) -> None:
    guardian = FakeGuardian()
    stack = await _stack(make_stack, aiohttp_server, guardian, Call.shell("rm -rf /"))
    assert (await _calls_released(stack))[0] == 0
    assert guardian.calls == []


@pytest.mark.parametrize(
    ("answer", "released"),
    [
        # Hard rules whatever the model says.
        (_assessment("allow", "critical", "high"), 0),
        (_assessment("allow", "high", "low"), 0),
        (_assessment("allow", "high", "medium"), 1),
        # Prose around one object is read; missing fields get the seed's defaults.
        ("Assessment follows: " + _assessment("allow") + " Done.", 1),
        ('{"outcome": "allow"}', 1),
        ('{"outcome": "maybe"}', 0),
        # Unknown enum values and non-JSON fail closed.
        (_assessment("allow", "severe"), 0),
        ("I think it is fine.", 0),
        ("", 0),
    ],
)
async def test_assessments_are_admitted_as_the_seed_does(
    make_stack: StackFactory, aiohttp_server: Any, answer: str, released: int
) -> None:
    guardian = FakeGuardian(answer=answer)
    stack = await _stack(make_stack, aiohttp_server, guardian, Call.shell("ls -la"))
    assert (await _calls_released(stack))[0] == released


@pytest.mark.parametrize("failure", ["wrong_model", "http_500", "timeout"])
async def test_a_failed_review_is_a_deny(
    make_stack: StackFactory, aiohttp_server: Any, failure: str
) -> None:
    guardian = FakeGuardian()
    if failure == "wrong_model":
        guardian.model = "gpt-4.1"
    elif failure == "http_500":
        guardian.status = 500
    else:
        guardian.delay = 2.0
    stack = await _stack(make_stack, aiohttp_server, guardian, Call.shell("ls -la"))
    released, text = await _calls_released(stack)
    assert released == 0 and "guardian review failed" in text
    assert _audited(stack)[0]["rule"] == "guard_failure"


def test_the_transcript_is_bounded_and_keeps_the_latest() -> None:
    messages = tuple(
        Message("tool" if i % 2 else "user", f"m{i} " + "x" * 5000) for i in range(200)
    )
    body = json.loads(
        guardian_input(ToolCall("shell", "{}"), Conversation("last words", messages, "t"))
    )
    transcript = body["transcript"]
    assert sum(len(m["text"]) for m in transcript) <= MAX_TRANSCRIPT_CHARS
    assert transcript[-1]["text"].startswith("m199")
    assert body["last_user_message"] == "last words"
