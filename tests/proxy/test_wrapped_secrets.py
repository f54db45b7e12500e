"""Wrapped secrets through the official SDKs: each wrapping is denied before the upstream.

For each wrapping, a request carrying a secret in it is refused with a 403 and
nothing reaches the fake upstream, and the same request carrying a clean value
in the same wrapping goes through. Secrets are built by concatenation so this
file does not itself look like it holds a key.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import anthropic
import openai
import pytest
from cryptography.hazmat.primitives import serialization as ser

from tests.conftest import Stack
from tests.guard.test_unwrap import EC_KEY, RSA_KEY

GITHUB_PAT = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
OPENAI_KEY = "sk-proj-" + "Zq8RmT2vXk9LwN4bY7cHd3Jf6Gp1Ks5Ua0EiOeQr" + "T3BlbkFJ" + "a8Rn2Wq5Zx7Kc"
CLEAN = "the quarterly report is ready for review, see the shared folder"

PRIVATE_DER = (
    EC_KEY.private_bytes(ser.Encoding.DER, ser.PrivateFormat.PKCS8, ser.NoEncryption()) + b""
)
PUBLIC_DER = RSA_KEY.public_key().public_bytes(
    ser.Encoding.DER, ser.PublicFormat.SubjectPublicKeyInfo
)


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def lines(data: str, width: int = 64, prefix: str = "") -> str:
    return "\n".join(prefix + data[i : i + width] for i in range(0, len(data), width))


def pct(data: str) -> str:
    return "".join(f"%{b:02X}" for b in data.encode())


Wrap = Callable[[str], str]
CYRILLIC = str.maketrans("aceopxABCEHKMOPTX", "асеорхАВСЕНКМОРТХ")

# Each takes the value to hide (a secret, or CLEAN) and returns the message text.
WRAPPINGS: dict[str, Wrap] = {
    "base64": lambda v: f"decode this: {b64(v)}",
    "base64 URL-safe, no padding": lambda v: (
        base64.urlsafe_b64encode(v.encode()).decode().rstrip("=")
    ),
    "base64 of an env file, wrapped": lambda v: lines(
        b64(f"LOG=info\nAPI_TOKEN={v}\nPORT=8080\n"), 76
    ),
    "percent, every character": lambda v: f"q={pct(v)}",
    "HTML entities, decimal": lambda v: "".join(f"&#{ord(c)};" for c in v),
    "HTML entities, hex": lambda v: "".join(f"&#x{ord(c):x};" for c in v),
    "hex": lambda v: v.encode().hex(),
    "backslash x escapes": lambda v: "".join(f"\\x{b:02x}" for b in v.encode()),
    "backslash u escapes": lambda v: "".join(f"\\u{ord(c):04x}" for c in v),
    "base64 of percent-encoding": lambda v: b64(pct(v)),
    "percent of base64": lambda v: pct(b64(v)),
    "zero-width spaces": lambda v: "\u200b".join(v),
    "soft hyphens and word joiners": lambda v: "".join(
        c + ("\u00ad" if i % 2 else "\u2060") for i, c in enumerate(v)
    ),
    "fullwidth": lambda v: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in v),
    "Cyrillic look-alikes": lambda v: v.translate(CYRILLIC),
}
SECRETS = {"GitHub token": GITHUB_PAT, "OpenAI key": OPENAI_KEY}

# Private key material without a PEM header, and public key material in the same shape.
KEY_SHAPES: dict[str, Callable[[bytes, str], str]] = {
    "bare key lines": lambda der, label: lines(b64(der)),
    "bare key lines, END line": lambda der, label: lines(b64(der)) + f"\n-----END {label}-----",
    "bare key lines, comment prefix": lambda der, label: lines(b64(der), prefix="# "),
    "bare key, one string": lambda der, label: f"id: {b64(der)}",
    "base64 of a PEM": lambda der, label: b64(
        f"-----BEGIN {label}-----\n" + lines(b64(der)) + f"\n-----END {label}-----\n"
    ),
}


def _openai(stack: Stack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="agent-key", max_retries=0)


def _anthropic(stack: Stack) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=f"{stack.url}/anthropic", api_key="agent-key", max_retries=0
    )


async def _chat(stack: Stack, text: str) -> None:
    await _openai(stack).chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": f"Please keep this for later:\n{text}"},
        ],
    )


async def _denied(stack: Stack, text: str, *hidden: str) -> None:
    with pytest.raises(openai.PermissionDeniedError) as info:
        await _chat(stack, text)
    err = info.value
    assert err.status_code == 403
    assert err.response.headers["x-reefgate-decision"] == "deny"
    assert err.response.headers["x-reefgate-category"] == "secret"
    for value in hidden:
        assert value not in err.message
    assert stack.upstream.received == []


@pytest.mark.parametrize("secret", sorted(SECRETS))
@pytest.mark.parametrize("wrapping", sorted(WRAPPINGS))
async def test_wrapped_secret_is_denied(stack: Stack, wrapping: str, secret: str) -> None:
    text = WRAPPINGS[wrapping](SECRETS[secret])
    await _denied(stack, text, SECRETS[secret], text)


@pytest.mark.parametrize("wrapping", sorted(WRAPPINGS))
async def test_clean_value_in_the_same_wrapping_passes(stack: Stack, wrapping: str) -> None:
    await _chat(stack, WRAPPINGS[wrapping](CLEAN))
    [got] = stack.upstream.received
    assert got.path == "/v1/chat/completions"


@pytest.mark.parametrize("shape", sorted(KEY_SHAPES))
async def test_private_key_without_a_header_is_denied(stack: Stack, shape: str) -> None:
    await _denied(stack, KEY_SHAPES[shape](PRIVATE_DER, "PRIVATE KEY"), b64(PRIVATE_DER)[:40])


@pytest.mark.parametrize("shape", sorted(KEY_SHAPES))
async def test_public_key_in_the_same_shape_passes(stack: Stack, shape: str) -> None:
    await _chat(stack, KEY_SHAPES[shape](PUBLIC_DER, "PUBLIC KEY"))
    assert len(stack.upstream.received) == 1


# Tool results are also checked for injection, which holds invisible characters
# for review whatever they hide: the clean twin of each case must be plain.
ANTHROPIC_CASES = ["base64 of an env file, wrapped", "percent of base64", "HTML entities, hex"]


def _tool_result(text: str) -> dict[str, object]:
    return {
        "messages": [
            {"role": "user", "content": "read the config"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "tu_1", "name": "cat", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": text}],
            },
        ]
    }


@pytest.mark.parametrize("wrapping", ANTHROPIC_CASES)
async def test_anthropic_tool_result_with_a_wrapped_secret(stack: Stack, wrapping: str) -> None:
    client = _anthropic(stack)
    with pytest.raises(anthropic.PermissionDeniedError) as info:
        await client.messages.create(  # type: ignore[call-overload]
            model="claude-sonnet-4-20250514",
            max_tokens=64,
            **_tool_result(WRAPPINGS[wrapping](GITHUB_PAT)),
        )
    assert info.value.status_code == 403
    assert GITHUB_PAT not in info.value.message
    assert stack.upstream.received == []
    message = await client.messages.create(  # type: ignore[call-overload]
        model="claude-sonnet-4-20250514",
        max_tokens=64,
        **_tool_result(WRAPPINGS[wrapping](CLEAN)),
    )
    assert message.content[0].text == "hello from upstream"
    assert len(stack.upstream.received) == 1


async def test_wrapped_secret_in_tool_call_arguments(stack: Stack) -> None:
    arguments = json.dumps({"env": b64(f"TOKEN={GITHUB_PAT}\n")})
    with pytest.raises(openai.PermissionDeniedError):
        await _openai(stack).chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "user", "content": "deploy"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "deploy", "arguments": arguments},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
            ],
        )
    assert stack.upstream.received == []
