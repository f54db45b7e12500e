"""The official SDKs, unchanged, against reefgate and an in-process fake upstream."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from tests.conftest import Stack

# Built by concatenation so this file does not itself look like it holds a key.
OPENAI_KEY = "sk-proj-" + "Zq8RmT2vXk9LwN4bY7cHd3Jf6Gp1Ks5Ua0EiOeQr" + "T3BlbkFJ" + "a8Rn2Wq5Zx7Kc"
GITHUB_PAT = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"


def _openai(stack: Stack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="agent-key", max_retries=0)


def _anthropic(stack: Stack) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=f"{stack.url}/anthropic", api_key="agent-key", max_retries=0
    )


async def test_openai_chat_passes_byte_faithfully(stack: Stack) -> None:
    client = _openai(stack)
    completion = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You are terse."},
            {
                "role": "user",
                "content": "Say hello. Commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 is fine.",
            },
        ],
    )
    assert completion.choices[0].message.content == "hello from upstream"
    [got] = stack.upstream.received
    assert got.path == "/v1/chat/completions"
    body = json.loads(got.body)
    assert body["messages"][1]["content"].startswith("Say hello.")
    assert got.headers["authorization"] == "Bearer agent-key"


async def test_openai_chat_streamed(stack: Stack) -> None:
    client = _openai(stack)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    pieces = [
        c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content
    ]
    assert "".join(pieces) == "hello from upstream"
    assert len(stack.upstream.received) == 1


async def test_openai_responses(stack: Stack) -> None:
    client = _openai(stack)
    response = await client.responses.create(model="gpt-4.1", input="hello there")
    assert response.output_text == "hello from upstream"
    assert stack.upstream.received[0].path == "/v1/responses"


async def test_openai_responses_streamed(stack: Stack) -> None:
    client = _openai(stack)
    stream = await client.responses.create(model="gpt-4.1", input="hello there", stream=True)
    types = [event.type async for event in stream]
    assert types[-1] == "response.completed"


async def test_anthropic_messages(stack: Stack) -> None:
    client = _anthropic(stack)
    message = await client.messages.create(
        model="claude-sonnet-4-20250514",
        max_tokens=64,
        system="Be brief.",
        messages=[{"role": "user", "content": "hello"}],
    )
    assert message.content[0].type == "text"
    assert message.content[0].text == "hello from upstream"
    [got] = stack.upstream.received
    assert got.path == "/v1/messages"
    # The agent's own credential passes through untouched (SDK versions differ in the header).
    assert "agent-key" in (
        got.headers.get("x-api-key"),
        got.headers.get("authorization", "").removeprefix("Bearer "),
    )


async def test_anthropic_messages_streamed(stack: Stack) -> None:
    client = _anthropic(stack)
    async with client.messages.stream(
        model="claude-sonnet-4-20250514",
        max_tokens=64,
        messages=[{"role": "user", "content": "hello"}],
    ) as stream:
        text = "".join([t async for t in stream.text_stream])
    assert text == "hello from upstream"


# -- secrets in every position are denied, and nothing reaches the upstream --


CHAT_POSITIONS: dict[str, list[dict[str, object]]] = {
    "user text": [{"role": "user", "content": f"my key is {OPENAI_KEY}"}],
    "system prompt": [
        {"role": "system", "content": f"Use token {GITHUB_PAT} for the API."},
        {"role": "user", "content": "hi"},
    ],
    "content part": [
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "text", "text": OPENAI_KEY}],
        }
    ],
    "tool-call arguments": [
        {"role": "user", "content": "push it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "git_push",
                        "arguments": json.dumps({"token": GITHUB_PAT}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ],
    "tool result": [
        {"role": "user", "content": "read the env"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "env", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": f"OPENAI_API_KEY={OPENAI_KEY}"},
    ],
}


@pytest.mark.parametrize("position", sorted(CHAT_POSITIONS))
async def test_openai_chat_secret_denied(stack: Stack, position: str) -> None:
    client = _openai(stack)
    with pytest.raises(openai.PermissionDeniedError) as info:
        await client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_POSITIONS[position])  # type: ignore[arg-type]
    err = info.value
    assert err.status_code == 403
    assert err.response.headers["x-reefgate-decision"] == "deny"
    assert err.response.headers["x-reefgate-category"] == "secret"
    assert OPENAI_KEY not in err.message and GITHUB_PAT not in err.message
    assert "message" in err.message
    assert stack.upstream.received == []


async def test_openai_chat_streamed_secret_denied(stack: Stack) -> None:
    client = _openai(stack)
    with pytest.raises(openai.PermissionDeniedError):
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": OPENAI_KEY}], stream=True
        )
    assert stack.upstream.received == []


async def test_openai_responses_input_item_denied(stack: Stack) -> None:
    client = _openai(stack)
    with pytest.raises(openai.PermissionDeniedError):
        await client.responses.create(
            model="gpt-4.1",
            input=[
                {"role": "user", "content": [{"type": "input_text", "text": "deploy"}]},
                {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": f"token={GITHUB_PAT}"},
            ],
        )
    assert stack.upstream.received == []


async def test_openai_responses_instructions_denied(stack: Stack) -> None:
    client = _openai(stack)
    with pytest.raises(openai.PermissionDeniedError):
        await client.responses.create(model="gpt-4.1", instructions=f"key {OPENAI_KEY}", input="hi")
    assert stack.upstream.received == []


ANTHROPIC_POSITIONS: dict[str, dict[str, object]] = {
    "user text": {"messages": [{"role": "user", "content": f"key: {OPENAI_KEY}"}]},
    "system prompt": {
        "system": f"token {GITHUB_PAT}",
        "messages": [{"role": "user", "content": "hi"}],
    },
    "content block": {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "x"}, {"type": "text", "text": GITHUB_PAT}],
            }
        ]
    },
    "tool_use input": {
        "messages": [
            {"role": "user", "content": "push"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu_1",
                        "name": "push",
                        "input": {"token": GITHUB_PAT},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "ok"}],
            },
        ]
    },
    "tool_result": {
        "messages": [
            {"role": "user", "content": "env"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "tu_1", "name": "env", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu_1",
                        "content": [{"type": "text", "text": f"OPENAI_API_KEY={OPENAI_KEY}"}],
                    }
                ],
            },
        ]
    },
}


@pytest.mark.parametrize("position", sorted(ANTHROPIC_POSITIONS))
async def test_anthropic_secret_denied(stack: Stack, position: str) -> None:
    client = _anthropic(stack)
    with pytest.raises(anthropic.PermissionDeniedError) as info:
        await client.messages.create(  # type: ignore[call-overload]
            model="claude-sonnet-4-20250514",
            max_tokens=64,
            **ANTHROPIC_POSITIONS[position],
        )
    err = info.value
    assert err.status_code == 403
    body = err.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == "permission_error"
    assert GITHUB_PAT not in str(body) and OPENAI_KEY not in str(body)
    assert stack.upstream.received == []


async def test_anthropic_streamed_secret_denied(stack: Stack) -> None:
    client = _anthropic(stack)
    with pytest.raises(anthropic.PermissionDeniedError):
        async with client.messages.stream(
            model="claude-sonnet-4-20250514",
            max_tokens=64,
            messages=[{"role": "user", "content": GITHUB_PAT}],
        ) as stream:
            async for _ in stream:
                pass
    assert stack.upstream.received == []


async def test_audit_holds_no_secret(stack: Stack) -> None:
    client = _openai(stack)
    with pytest.raises(openai.PermissionDeniedError):
        await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": f"{OPENAI_KEY} and {GITHUB_PAT}"}],
        )
    await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )
    text = stack.audit_path.read_text()
    assert OPENAI_KEY not in text and GITHUB_PAT not in text
    records = [json.loads(line) for line in text.splitlines()]
    denied = records[0]["event"]["payload"]
    assert denied["decision"] == "deny"
    assert denied["category"] == "secret"
    assert len(denied["findings"]) == 2
    assert all(len(f["fingerprint"]) >= 12 for f in denied["findings"])
    assert records[1]["event"]["payload"]["decision"] == "allow"


async def test_openai_file_upload_is_scanned(stack: Stack) -> None:
    client = _openai(stack)
    await client.files.create(file=("notes.txt", b"plain notes\n"), purpose="assistants")
    [sent] = stack.upstream.received
    assert sent.path == "/v1/files"
    assert sent.headers["content-type"].startswith("multipart/form-data")
    assert b"plain notes" in sent.body
    with pytest.raises(openai.PermissionDeniedError) as info:
        await client.files.create(
            file=(".env", f"GITHUB_TOKEN={GITHUB_PAT}\n".encode()), purpose="assistants"
        )
    assert info.value.response.headers["x-reefgate-category"] == "secret"
    assert GITHUB_PAT not in info.value.message
    assert len(stack.upstream.received) == 1
