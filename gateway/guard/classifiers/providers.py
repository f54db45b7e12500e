"""Sans-IO classifier adapters: build the provider request, read the provider response.

Each adapter's `read` returns the raw verdict object (with `model` taken from
the provider's envelope) or raises AdmissionError; admission happens after.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from gateway.guard.classifiers.instructions import VERDICT_SCHEMA, instructions
from gateway.guard.verdict import AdmissionError, GuardRequest, parse_envelope, verdict_object


@dataclass(frozen=True, slots=True)
class ProviderRequest:
    url: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Prompt:
    """One structured-output question: trusted instructions, untrusted input as data."""

    system: str
    input: str
    schema_name: str
    schema: dict[str, object]

    def system_with_schema(self) -> str:
        # For providers whose structured output is best-effort, the schema is
        # also spelled out in the instructions.
        schema = json.dumps(self.schema, separators=(",", ":"))
        return f"{self.system} The object must exactly match this schema: {schema}"


class Provider(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def pinned_model(self) -> str: ...

    def ask(self, prompt: Prompt) -> ProviderRequest: ...

    def answer(self, status: int, body: str) -> str:
        """The one text the pinned model answered with; AdmissionError for anything else."""
        ...


def verdict_prompt(request: GuardRequest, rules: str | None) -> Prompt:
    return Prompt(
        instructions(request.direction, request.policy_version, rules),
        request.to_json(),
        "reefgate_guard_verdict",
        VERDICT_SCHEMA,
    )


def build(provider: Provider, request: GuardRequest, rules: str | None) -> ProviderRequest:
    """The guard's classification request to ``provider``."""
    return provider.ask(verdict_prompt(request, rules))


def read(provider: Provider, status: int, body: str) -> dict[str, object]:
    """The raw verdict object from ``provider``'s response, with `model` from its envelope."""
    return verdict_object(provider.answer(status, body), provider.pinned_model)


def _dumps(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _ok(status: int) -> None:
    if not 200 <= status < 300:
        raise AdmissionError(f"provider answered HTTP {status}")


def _same_model(envelope: dict[str, object], pinned: str) -> str:
    model = envelope.get("model")
    if model != pinned:
        raise AdmissionError("provider response model differs from the pinned model")
    return pinned


@dataclass(frozen=True, slots=True)
class OpenAIResponses:
    base_url: str
    pinned_model: str
    api_key: str
    name: str = "openai"

    def ask(self, prompt: Prompt) -> ProviderRequest:
        body = {
            "model": self.pinned_model,
            "instructions": prompt.system,
            "input": prompt.input,
            "store": False,
            "background": False,
            "tools": [],
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": prompt.schema_name,
                    "strict": True,
                    "schema": prompt.schema,
                }
            },
        }
        return ProviderRequest(
            f"{self.base_url}/v1/responses",
            {"content-type": "application/json", "authorization": f"Bearer {self.api_key}"},
            _dumps(body),
        )

    def answer(self, status: int, body: str) -> str:
        _ok(status)
        envelope = parse_envelope(body)
        _same_model(envelope, self.pinned_model)
        if envelope.get("status") != "completed":
            raise AdmissionError("response is not completed")
        output = envelope.get("output")
        if not isinstance(output, list):
            raise AdmissionError("response has no output list")
        texts: list[str] = []
        for item in output:
            if not isinstance(item, dict) or item.get("type") != "message":
                continue
            content = item.get("content")
            if not isinstance(content, list):
                continue
            for part in content:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    text = part.get("text")
                    if not isinstance(text, str):
                        raise AdmissionError("output_text without text")
                    texts.append(text)
        if len(texts) != 1:
            raise AdmissionError("response must hold exactly one output_text")
        return texts[0]


@dataclass(frozen=True, slots=True)
class AnthropicMessages:
    base_url: str
    pinned_model: str
    api_key: str
    name: str = "anthropic"

    def ask(self, prompt: Prompt) -> ProviderRequest:
        body = {
            "model": self.pinned_model,
            "max_tokens": 512,
            "system": prompt.system_with_schema(),
            "output_config": {"format": {"type": "json_schema", "schema": prompt.schema}},
            "messages": [{"role": "user", "content": prompt.input}],
        }
        return ProviderRequest(
            f"{self.base_url}/v1/messages",
            {
                "content-type": "application/json",
                "x-api-key": self.api_key,
                "anthropic-version": "2023-06-01",
            },
            _dumps(body),
        )

    def answer(self, status: int, body: str) -> str:
        _ok(status)
        envelope = parse_envelope(body)
        _same_model(envelope, self.pinned_model)
        if envelope.get("stop_reason") != "end_turn":
            raise AdmissionError("message did not end its turn")
        content = envelope.get("content")
        if not isinstance(content, list) or len(content) != 1:
            raise AdmissionError("message must hold exactly one content block")
        block = content[0]
        if not isinstance(block, dict) or block.get("type") != "text":
            raise AdmissionError("the content block is not text")
        text = block.get("text")
        if not isinstance(text, str):
            raise AdmissionError("text block without text")
        return text


@dataclass(frozen=True, slots=True)
class OpenAICompatibleChat:
    """Local guard models behind vLLM, Ollama or llama.cpp's OpenAI-compatible server."""

    base_url: str
    pinned_model: str
    api_key: str
    name: str = "openai-compatible"

    def ask(self, prompt: Prompt) -> ProviderRequest:
        body = {
            "model": self.pinned_model,
            "messages": [
                {"role": "system", "content": prompt.system_with_schema()},
                {"role": "user", "content": prompt.input},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": prompt.schema_name,
                    "strict": True,
                    "schema": prompt.schema,
                },
            },
            "temperature": 0,
            "stream": False,
        }
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return ProviderRequest(f"{self.base_url}/v1/chat/completions", headers, _dumps(body))

    def answer(self, status: int, body: str) -> str:
        _ok(status)
        envelope = parse_envelope(body)
        _same_model(envelope, self.pinned_model)
        choices = envelope.get("choices")
        if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
            raise AdmissionError("completion must hold exactly one choice")
        choice = choices[0]
        if choice.get("finish_reason") != "stop":
            raise AdmissionError("completion did not stop normally")
        message = choice.get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if not isinstance(text, str):
            raise AdmissionError("completion has no text content")
        return text
