"""Output redaction: secrets in model text replaced before the agent sees them, however split."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from gateway.config.models import Team
from tests.conftest import Stack, StackFactory
from tests.fakes import FakeUpstream

# Built by concatenation so this file does not itself look like it holds a key.
GITHUB_PAT = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
OPENAI_KEY = "sk-proj-" + "Zq8RmT2vXk9LwN4bY7cHd3Jf6Gp1Ks5Ua0EiOeQr" + "T3BlbkFJ" + "a8Rn2Wq5Zx7Kc"
TEXT = "Found it in the old config. The token is {secret} and it still works; rotate it soon."


async def _stack(make_stack: StackFactory, secret: str, pieces: int, redact: bool = True) -> Stack:
    fake = FakeUpstream(reply=(TEXT.format(secret=secret), []), pieces=pieces)
    stack: Stack = await make_stack(
        fake, teams={"default": Team(default=True, redact_output=redact)}
    )
    return stack


def _leaks(text: str, secret: str) -> bool:
    return any(secret[i : i + 8] in text for i in range(len(secret) - 7))


async def _chat_text(stack: Stack, stream: bool) -> str:
    client = openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="k", max_retries=0)
    messages: Any = [{"role": "user", "content": "where is the token?"}]
    if not stream:
        completion = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        return completion.choices[0].message.content or ""
    chunks = await client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, stream=True
    )
    return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])


async def _responses_text(stack: Stack, stream: bool) -> str:
    client = openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="k", max_retries=0)
    if not stream:
        return (await client.responses.create(model="gpt-4.1", input="where?")).output_text
    deltas: list[str] = []
    async with client.responses.stream(model="gpt-4.1", input="where?") as events:
        async for event in events:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = await events.get_final_response()
    # What was streamed and what the final response says agree.
    assert "".join(deltas) == final.output_text
    return final.output_text


async def _messages_text(stack: Stack, stream: bool) -> str:
    client = anthropic.AsyncAnthropic(base_url=f"{stack.url}/anthropic", api_key="k", max_retries=0)
    kwargs: Any = {
        "model": "claude-sonnet-4-20250514",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "where?"}],
    }
    if not stream:
        message = await client.messages.create(**kwargs)
    else:
        async with client.messages.stream(**kwargs) as events:
            message = await events.get_final_message()
    return "".join(b.text for b in message.content if b.type == "text")


READERS = {"chat": _chat_text, "responses": _responses_text, "messages": _messages_text}


@pytest.mark.parametrize("pieces", [2, 3, 7, 12, 20])
@pytest.mark.parametrize("api", sorted(READERS))
async def test_a_streamed_secret_is_redacted_however_split(
    make_stack: StackFactory, api: str, pieces: int
) -> None:
    secret = GITHUB_PAT if pieces % 2 else OPENAI_KEY
    stack = await _stack(make_stack, secret, pieces)
    text = await READERS[api](stack, True)
    assert not _leaks(text, secret)
    assert "[REDACTED:" in text
    assert text.startswith("Found it in the old config.") and text.endswith("rotate it soon.")


@pytest.mark.parametrize("api", sorted(READERS))
async def test_a_whole_answer_is_redacted(make_stack: StackFactory, api: str) -> None:
    stack = await _stack(make_stack, GITHUB_PAT, 3)
    text = await READERS[api](stack, False)
    assert not _leaks(text, GITHUB_PAT) and "[REDACTED:github" in text


async def test_redaction_is_off_by_default(make_stack: StackFactory) -> None:
    stack = await _stack(make_stack, GITHUB_PAT, 4, redact=False)
    assert GITHUB_PAT in await _chat_text(stack, True)
