"""The adapters' walk, made faster, against the frozen copy in tests/wire/_reference.

Every adapter must return exactly the segments it returned before (path, role,
text, trust, index and expected, in order, with the same types) or raise the
same error with the same message, for every body: the fast paths are only
shortcuts through the general walk. Bodies come from a seeded generator of
chat, messages, responses, assistants, converse, batch and JSONL bodies
(every content-part and block type, tool calls and results, odd roles, extra
keys, non-string values, unicode, JSON written in strings, deep nesting),
each also mutated at random, and from hypothesis.
"""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.wire import (
    _chat,
    anthropic,
    generic,
    hosted,
    nested,
    openai_assistants,
    openai_chat,
    openai_responses,
)
from gateway.wire.base import Segment
from tests.wire import sdk_capture
from tests.wire._reference import anthropic as ref_anthropic
from tests.wire._reference import generic as ref_generic
from tests.wire._reference import hosted as ref_hosted
from tests.wire._reference import nested as ref_nested
from tests.wire._reference import openai_assistants as ref_assistants
from tests.wire._reference import openai_chat as ref_chat
from tests.wire._reference import openai_responses as ref_responses

Adapter = Callable[[object], list[Segment]]

# (live, reference) by the kind of body each reads.
ADAPTERS: dict[str, list[tuple[Adapter, Adapter]]] = {
    "chat": [
        (openai_chat.segments, ref_chat.segments),
        (hosted.invoke_segments, ref_hosted.invoke_segments),
    ],
    "anthropic": [
        (anthropic.segments, ref_anthropic.segments),
        (hosted.invoke_segments, ref_hosted.invoke_segments),
    ],
    "batch": [(anthropic.batch_segments, ref_anthropic.batch_segments)],
    "responses": [(openai_responses.segments, ref_responses.segments)],
    "conversation": [(openai_responses.conversation_segments, ref_responses.conversation_segments)],
    "assistants": [
        (openai_assistants.thread_segments, ref_assistants.thread_segments),
        (openai_assistants.run_segments, ref_assistants.run_segments),
        (openai_assistants.message_segments, ref_assistants.message_segments),
        (openai_assistants.tool_outputs_segments, ref_assistants.tool_outputs_segments),
    ],
    "converse": [(hosted.converse_segments, ref_hosted.converse_segments)],
    "generic": [(generic.segments, ref_generic.segments)],
}
EVERY = [pair for pairs in ADAPTERS.values() for pair in pairs]


def _outcome(adapter: Callable[[], list[Segment]]) -> object:
    try:
        found = adapter()
    except Exception as exc:  # the error, its type and message, is part of the contract
        return ("error", type(exc).__name__, str(exc))
    return [
        (
            *((type(value), value) for value in (s.path, s.role, s.text, s.trust, s.index)),
            (type(s.expected), tuple(sorted(s.expected))),
        )
        for s in found
    ]


def assert_same(live: Adapter, reference: Adapter, payload: object) -> None:
    before = copy.deepcopy(payload)
    expected = _outcome(lambda: reference(copy.deepcopy(payload)))
    got = _outcome(lambda: live(payload))
    assert got == expected, f"{live.__module__}.{live.__name__} differs on {payload!r:.2000}"
    assert payload == before, "the adapter changed its payload"


# -- the generator --

_PNG = sdk_capture.PNG_URL
_TEXT_B64 = base64.b64encode(b"DB_PASSWORD=hunter2 and some plain text\n").decode()

STRINGS = [
    "",
    "",
    "hello",
    "Plain words, a sentence.",
    " ",
    "\n",
    "auto",
    "user",
    "assistant",
    "tool",
    "function",
    "text",
    "type",
    "message",
    "image_url",
    "function_call",
    "high",
    "json_schema",
    "password",
    "call_1",
    "toolu_01ABC",
    "sk-proj-" + "A1b2C3d4" * 6,
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a1B2" * 9,
    "ünïcödé ✓ 🙂 中文",
    "\u2028line\u2029sep",
    'tab\tand "quotes" and \\ backslash',
    '{"password": "hunter2"}',
    '{"a": "\\u0041BC", "api_key": "x"}',
    '  {"token": "abc", "nested": "{\\"secret\\": \\"y\\"}"}',
    '[1, "two", {"client_secret": "z"}]',
    '{"path": "src/", "pattern": "x_y"}',
    '{"name": "DB_PASSWORD", "value": "p4ss"}',
    '{"a": "\\/x", "b": "\\n"}',
    '{"k": 1, "k": 2, "password": "dup"}',
    "{not json",
    "[",
    "{}",
    "[]",
    "data:text/plain;base64," + _TEXT_B64,
    "data:text/plain,hello%20world",
    "data:image/png;base64,iVBORw0KGgo=",
    _PNG,
    _TEXT_B64,
    "aGVsbG8=",
    "x" * 300,
    "word " * 50,
]
KEYS = [
    "text",
    "type",
    "role",
    "content",
    "name",
    "arguments",
    "input",
    "id",
    "call_id",
    "tool_call_id",
    "tool_use_id",
    "value",
    "Value",
    "key",
    "Name",
    "password",
    "api_key",
    "prompt_cache_key",
    "output",
    "source",
    "data",
    "media_type",
    "format",
    "filename",
    "citations",
    "logprobs",
    "token",
    "results",
    "required",
    "include",
    "modalities",
    "detail",
    "file_data",
    "image_url",
    "url",
    "title",
    "context",
    "refusal",
    "tool_calls",
    "function",
    "function_call",
    "summary",
    "encrypted_content",
    "signature",
    "status",
    "model",
    "metadata",
    "bytes",
    "toolUse",
    "toolResult",
    "document",
    "image",
    "reasoningContent",
    "redactedContent",
    "annotations",
    "error",
    "tools",
    "outputs",
    "result",
    "my_field",
    "weird key",
    "k3y1234567890abcdefghij",
    "a" * 70,
    "",
    "é",
    "$ref",
    "x-custom",
]
ROLES = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
    "ipython",
    "model",
    "",
    "unknown",
    "Assistant",
    "system ",
]
TYPES = [
    # chat parts
    "text",
    "refusal",
    "image_url",
    "input_audio",
    "file",
    # anthropic blocks
    "image",
    "document",
    "base64",
    "search_result",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "server_tool_use",
    "mcp_tool_use",
    "tool_result",
    "mcp_tool_result",
    "web_search_tool_result",
    "mcp_tool_listing",
    "compaction",
    "fallback",
    "url",
    # responses parts and items
    "input_text",
    "output_text",
    "input_image",
    "input_file",
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "computer_call_output",
    "reasoning",
    "image_generation_call",
    "program",
    "program_output",
    "file_search_call",
    "code_interpreter_call",
    "mcp_call",
    "mcp_list_tools",
    "tool_search_output",
    "item_reference",
    # assistants
    "image_file",
    # unknown
    "mystery",
    "",
]


class Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def string(self) -> str:
        r = self.r
        roll = r.random()
        if roll < 0.75:
            return r.choice(STRINGS)
        if roll < 0.85:
            return r.choice(KEYS)
        if roll < 0.95:
            return "".join(r.choice('ab_-$9 \\"{}[]:,é\n') for _ in range(r.randint(0, 12)))
        return json.dumps(self.value(2))

    def scalar(self) -> object:
        return self.r.choice([None, True, False, 0, 1, -3, 2.5, 1e300, self.string()])

    def value(self, depth: int = 3) -> object:
        r = self.r
        roll = r.random()
        if depth <= 0 or roll < 0.55:
            return self.string() if r.random() < 0.7 else self.scalar()
        if roll < 0.8:
            return {self.key(): self.value(depth - 1) for _ in range(r.randint(0, 4))}
        return [self.value(depth - 1) for _ in range(r.randint(0, 4))]

    def key(self) -> str:
        return self.r.choice(KEYS) if self.r.random() < 0.85 else self.string()

    def deep(self) -> object:
        leaf: object = self.string()
        for _ in range(self.r.choice([60, 61, 62, 63, 64, 65, 66, 70])):
            leaf = [leaf] if self.chance(0.5) else {self.key(): leaf}
        return leaf

    def shuffled(self, obj: dict[str, object]) -> dict[str, object]:
        if self.chance(0.15):
            items = list(obj.items())
            self.r.shuffle(items)
            return dict(items)
        return obj

    def extra(self, obj: dict[str, object]) -> dict[str, object]:
        if self.chance(0.1):
            obj[self.key()] = self.value(2)
        return obj

    # chat completions

    def tool_call(self) -> dict[str, object]:
        args: object = json.dumps({self.key(): self.value(2) for _ in range(self.r.randint(0, 3))})
        if self.chance(0.1):
            args = self.value(2)
        call: dict[str, object] = {
            "id": self.r.choice(["call_1", "call_abc123", self.string()]),
            "type": "function" if self.chance(0.9) else self.r.choice(["custom", self.string()]),
            "function": {
                "name": self.r.choice(["grep", "read_file", self.string()]),
                "arguments": args,
            },
        }
        if self.chance(0.05):
            call["custom"] = {"name": "x", "input": self.string()}
        return self.extra(self.shuffled(call))

    def chat_part(self) -> object:
        kind = self.r.choice(
            ["text", "text", "text", "image_url", "input_audio", "file", "refusal"]
        )
        if self.chance(0.05):
            kind = self.r.choice(TYPES)
        part: dict[str, object]
        if kind == "text":
            part = {"type": "text", "text": self.string()}
        elif kind == "refusal":
            part = {"type": "refusal", "refusal": self.string()}
        elif kind == "image_url":
            part = {
                "type": "image_url",
                "image_url": {"url": self.r.choice([_PNG, "https://x.test/a.png", self.string()])},
            }
            if self.chance(0.5):
                part["image_url"]["detail"] = self.r.choice(["auto", "low", self.string()])  # type: ignore[index]
        elif kind == "input_audio":
            part = {"type": "input_audio", "input_audio": {"data": self.string(), "format": "wav"}}
        elif kind == "file":
            part = {
                "type": "file",
                "file": {
                    "file_data": self.r.choice([_TEXT_B64, self.string()]),
                    "filename": "a.txt",
                },
            }
        else:
            part = {"type": kind, self.key(): self.value(2)}
        if self.chance(0.03):
            return self.value(2)
        return self.extra(self.shuffled(part))

    def content(self, part: Callable[[], object]) -> object:
        roll = self.r.random()
        if roll < 0.6:
            return self.string()
        if roll < 0.9:
            return [part() for _ in range(self.r.randint(0, 4))]
        return self.scalar() if self.chance(0.5) else self.value(2)

    def chat_message(self) -> object:
        r = self.r
        shape = r.random()
        role = r.choice(ROLES[:4]) if r.random() < 0.85 else r.choice(ROLES)
        msg: dict[str, object]
        if shape < 0.35:
            msg = {"role": role, "content": self.string()}
        elif shape < 0.5:
            msg = {
                "role": "tool",
                "tool_call_id": r.choice(["call_1", self.string()]),
                "content": self.string(),
            }
            if self.chance(0.1):
                msg["content"] = self.content(self.chat_part)
        elif shape < 0.65:
            msg = {
                "role": "assistant",
                "content": r.choice([None, None, "", self.string()]),
                "tool_calls": [self.tool_call() for _ in range(r.randint(0, 3))],
            }
        elif shape < 0.85:
            msg = {"role": role, "content": self.content(self.chat_part)}
            if self.chance(0.3):
                msg["name"] = self.string()
        elif shape < 0.9:
            msg = {"role": "assistant", "function_call": {"name": "f", "arguments": self.string()}}
        elif shape < 0.97:
            msg = {self.key(): self.value(2) for _ in range(r.randint(0, 4))}
            if self.chance(0.5):
                msg["role"] = role
        else:
            return self.value(2)
        if self.chance(0.05):
            msg["role"] = self.scalar() if self.chance(0.5) else self.value(1)
        return self.extra(self.shuffled(msg))

    def chat(self) -> object:
        body: dict[str, object] = {
            "model": "gpt-4o-mini",
            "messages": [self.chat_message() for _ in range(self.r.randint(0, 12))],
        }
        return self.top(body, ["temperature", "tools", "tool_choice", "metadata", "stop", "user"])

    def top(self, body: dict[str, object], known: list[str]) -> object:
        for _ in range(self.r.randint(0, 3)):
            key = self.r.choice(known) if known and self.chance(0.6) else self.key()
            body[key] = self.value(3)
        if self.chance(0.02):
            body[self.key()] = self.deep()
        return self.shuffled(body)

    # anthropic messages

    def block(self) -> object:
        r = self.r
        kind = r.choice(
            ["text", "text", "tool_use", "tool_result", "image", "document", "thinking"]
        )
        if self.chance(0.15):
            kind = r.choice(TYPES)
        block: dict[str, object]
        if kind == "text":
            block = {"type": "text", "text": self.string()}
            if self.chance(0.1):
                block["citations"] = [self.value(2)]
        elif kind == "tool_use":
            block = {
                "type": kind,
                "id": r.choice(["toolu_01", self.string()]),
                "name": r.choice(["bash", self.string()]),
                "input": {self.key(): self.value(2) for _ in range(r.randint(0, 3))},
            }
        elif kind == "tool_result":
            block = {
                "type": kind,
                "tool_use_id": r.choice(["toolu_01", self.string()]),
                "content": self.content(self.block),
            }
            if self.chance(0.2):
                block["is_error"] = True
        elif kind in ("image", "document"):
            source = r.choice(
                [
                    {"type": "base64", "media_type": "image/png", "data": _PNG.split(",", 1)[1]},
                    {"type": "base64", "media_type": "text/plain", "data": _TEXT_B64},
                    {"type": "url", "url": "https://x.test/d.pdf"},
                    {"type": "text", "media_type": "text/plain", "data": self.string()},
                    {"type": "content", "content": [{"type": "text", "text": self.string()}]},
                ]
            )
            block = {"type": kind, "source": source}
            if kind == "document" and self.chance(0.5):
                block["title"] = self.string()
        elif kind == "thinking":
            block = {"type": kind, "thinking": self.string(), "signature": self.string()}
        else:
            block = {"type": kind, self.key(): self.value(2)}
        if self.chance(0.1):
            block["cache_control"] = {"type": "ephemeral"}
        if self.chance(0.03):
            return self.value(2)
        return self.extra(self.shuffled(block))

    def anthropic_message(self) -> object:
        if self.chance(0.03):
            return self.value(2)
        role = self.r.choice(["user", "assistant"]) if self.chance(0.9) else self.r.choice(ROLES)
        msg: dict[str, object] = {"role": role, "content": self.content(self.block)}
        return self.extra(self.shuffled(msg))

    def anthropic(self) -> object:
        body: dict[str, object] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "messages": [self.anthropic_message() for _ in range(self.r.randint(0, 10))],
        }
        if self.chance(0.6):
            body["system"] = self.content(self.block)
        if self.chance(0.3):
            body["anthropic_version"] = "bedrock-2023-05-31"
        return self.top(body, ["tools", "metadata", "stop_sequences", "thinking", "tool_choice"])

    def batch(self) -> object:
        requests: list[object] = []
        for _ in range(self.r.randint(0, 3)):
            request: dict[str, object] = {"custom_id": self.string(), "params": self.anthropic()}
            requests.append(self.extra(request) if self.chance(0.9) else self.value(2))
        return self.top({"requests": requests}, [])

    # responses

    def item(self) -> object:
        r = self.r
        kind = r.choice(["message", "easy", "function_call", "function_call_output", "reasoning"])
        if self.chance(0.2):
            kind = r.choice(TYPES)
        item: dict[str, object]

        def part() -> object:
            return self.part(["input_text", "output_text", "input_image", "input_file", "refusal"])

        if kind == "easy":
            item = {"role": r.choice(ROLES), "content": self.content(part)}
        elif kind == "message":
            item = {"type": "message", "role": r.choice(ROLES), "content": self.content(part)}
            if self.chance(0.3):
                item["id"] = "msg_1"
                item["status"] = "completed"
        elif kind == "function_call":
            item = {
                "type": kind,
                "call_id": "call_1",
                "name": r.choice(["grep", self.string()]),
                "arguments": json.dumps({self.key(): self.value(1)})
                if self.chance(0.8)
                else self.value(2),
            }
        elif kind == "function_call_output":
            item = {"type": kind, "call_id": "call_1", "output": self.content(part)}
        if kind in ("function_call", "function_call_output"):
            if self.chance(0.3):
                item["call_id"] = self.string()
            if self.chance(0.3):
                item["id"] = r.choice(["fc_1", self.string()])
                item["status"] = r.choice(["completed", self.string()])
        elif kind == "reasoning":
            item = {
                "type": kind,
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": self.string()}],
                "encrypted_content": self.string(),
            }
        else:
            item = {"type": kind, self.key(): self.value(2)}
            if self.chance(0.3):
                del item["type"]
        if self.chance(0.03):
            return self.value(2)
        return self.extra(self.shuffled(item))

    def part(self, kinds: list[str]) -> object:
        kind = self.r.choice(kinds) if self.chance(0.9) else self.r.choice(TYPES)
        part: dict[str, object] = {"type": kind, "text": self.string()}
        if kind == "output_text" and self.chance(0.3):
            part["annotations"] = [self.value(2)]
            part["logprobs"] = [{"token": self.string(), "logprob": -0.1, "top_logprobs": []}]
        elif kind in ("input_image", "input_file") or self.chance(0.1):
            part = {
                "type": kind,
                self.key(): self.string(),
                "detail": self.r.choice(["auto", self.string()]),
            }
            if kind == "input_file":
                part["file_data"] = self.r.choice(
                    [_TEXT_B64, "data:text/plain;base64," + _TEXT_B64]
                )
        if self.chance(0.03):
            return self.value(2)
        return self.extra(self.shuffled(part))

    def responses(self) -> object:
        body: dict[str, object] = {"model": "gpt-4.1"}
        roll = self.r.random()
        if roll < 0.8:
            body["input"] = [self.item() for _ in range(self.r.randint(0, 10))]
        elif roll < 0.9:
            body["input"] = self.string()
        elif roll < 0.95:
            body["input"] = self.value(2)
        if self.chance(0.4):
            body["instructions"] = self.content(lambda: self.part(["input_text"]))
        return self.top(body, ["include", "tools", "text", "reasoning", "prompt", "metadata"])

    def conversation(self) -> object:
        body: dict[str, object] = {"items": [self.item() for _ in range(self.r.randint(0, 6))]}
        if self.chance(0.1):
            body["items"] = self.value(2)
        return self.top(body, ["metadata"])

    # assistants

    def assistants(self) -> object:
        part = lambda: self.part(["text", "image_url", "image_file"])  # noqa: E731
        messages = [
            self.extra({"role": self.r.choice(ROLES), "content": self.content(part)})
            for _ in range(self.r.randint(0, 4))
        ]
        body: dict[str, object] = {}
        for key in self.r.sample(
            [
                "messages",
                "additional_messages",
                "thread",
                "tool_outputs",
                "instructions",
                "assistant_id",
            ],
            self.r.randint(1, 4),
        ):
            if key in ("messages", "additional_messages"):
                body[key] = messages
            elif key == "thread":
                body[key] = {"messages": messages, "metadata": self.value(1)}
            elif key == "tool_outputs":
                body[key] = [
                    self.extra({"tool_call_id": "call_1", "output": self.string()})
                    for _ in range(self.r.randint(0, 3))
                ]
            else:
                body[key] = self.string()
        if self.chance(0.3):
            body.update(self.extra({"role": "user", "content": self.content(part)}))
        return self.top(body, ["tools", "metadata", "model"])

    # bedrock converse

    def converse_block(self) -> object:
        r = self.r
        kind = r.choice(
            ["text", "toolUse", "toolResult", "image", "document", "reasoningContent", "cachePoint"]
        )
        value: object
        if kind == "text":
            value = self.string()
        elif kind == "toolUse":
            value = {"toolUseId": "t1", "name": "f", "input": {self.key(): self.value(2)}}
        elif kind == "toolResult":
            value = {
                "toolUseId": "t1",
                "content": [{"text": self.string()}, {"json": self.value(2)}],
            }
        elif kind in ("image", "document"):
            value = {"format": "txt", "source": {"bytes": r.choice([_TEXT_B64, self.string()])}}
        elif kind == "reasoningContent":
            value = {"redactedContent": self.string()}
        else:
            value = {"type": "default"}
        if self.chance(0.05):
            return self.value(2)
        return self.extra({kind: value})

    def converse(self) -> object:
        messages = [
            self.extra(
                {
                    "role": self.r.choice(ROLES),
                    "content": [self.converse_block() for _ in range(self.r.randint(0, 3))]
                    if self.chance(0.9)
                    else self.value(2),
                }
            )
            for _ in range(self.r.randint(0, 5))
        ]
        body: dict[str, object] = {"messages": messages}
        if self.chance(0.5):
            body["system"] = [self.converse_block()]
        return self.top(body, ["toolConfig", "inferenceConfig", "requestMetadata"])

    def body(self, kind: str) -> object:
        made: object = getattr(self, kind)() if kind != "generic" else self.value(4)
        if self.chance(0.25):
            made = self.mutate(made, 0)
        return made

    def mutate(self, value: object, depth: int) -> object:
        """The same body with a few nodes replaced, dropped or added."""
        r = self.r
        if depth > 6:
            return value
        if isinstance(value, dict):
            out: dict[str, object] = {}
            for key, item in value.items():
                roll = r.random()
                if roll < 0.03:
                    continue
                out[key] = self.value(2) if roll < 0.06 else self.mutate(item, depth + 1)
            if self.chance(0.04):
                out[self.key()] = self.value(2)
            return out
        if isinstance(value, list):
            return [
                self.value(2) if self.chance(0.03) else self.mutate(x, depth + 1) for x in value
            ]
        return self.scalar() if self.chance(0.02) else value


def _jsonl(gen: Gen) -> str:
    lines = []
    for _ in range(gen.r.randint(0, 5)):
        roll = gen.r.random()
        if roll < 0.3:
            line: object = {
                "custom_id": "r1",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": gen.chat(),
            }
            if gen.chance(0.3):
                line["url"] = gen.r.choice(["/v1/responses", "/v1/messages", "/v1/embeddings", 3])  # type: ignore[index]
                line["body"] = gen.r.choice([gen.responses(), gen.anthropic(), gen.value(2)])  # type: ignore[index]
        elif roll < 0.5:
            line = gen.chat()
        elif roll < 0.65:
            line = {
                "input": gen.chat(),
                "preferred_output": [gen.chat_message()],
                "non_preferred_output": [gen.chat_message()],
            }
        elif roll < 0.8:
            line = gen.value(3)
        else:
            lines.append(gen.r.choice(["not json", "", "  ", '{"a": 1, "a": 2}', "{"]))
            continue
        lines.append(json.dumps(line, ensure_ascii=gen.chance(0.5)))
    text = "\n".join(lines)
    return (" " + text) if gen.chance(0.1) else text


KINDS = list(ADAPTERS)
# 20k generated bodies, split so a failure names its share.
SHARES = 20
PER_SHARE = 1000


@pytest.mark.parametrize("share", range(SHARES))
def test_generated_bodies(share: int) -> None:
    gen = Gen(share)
    for n in range(PER_SHARE):
        kind = KINDS[n % len(KINDS)]
        payload = gen.body(kind)
        for live, reference in ADAPTERS[kind]:
            assert_same(live, reference, payload)
        if n % 4 == 0:
            # Every adapter on every kind: each must read any body as before.
            live, reference = EVERY[gen.r.randrange(len(EVERY))]
            assert_same(live, reference, payload)


@pytest.mark.parametrize("share", range(4))
def test_generated_jsonl_files(share: int) -> None:
    gen = Gen(1000 + share)
    for _ in range(250):
        text = _jsonl(gen)
        path = gen.r.choice(["file", "", "form.file"])
        index = gen.r.choice([None, 0, 3])
        expected = _outcome(lambda: ref_nested.file_segments(text, path, index))  # noqa: B023
        assert _outcome(lambda: nested.file_segments(text, path, index)) == expected  # noqa: B023


def test_bench_turns() -> None:
    from bench._corpus import AgentTurns

    turns = AgentTurns()
    for n in range(20):
        for leak in (False, True):
            payload = json.loads(turns.body(n, f"t{n}", leak))
            for live, reference in ADAPTERS["chat"]:
                assert_same(live, reference, payload)


def test_many_tool_calls_in_one_message() -> None:
    """Tool-call indexes of several digits: the C walk writes these paths itself."""
    gen = Gen(31)
    for count in (9, 10, 11, 99, 100, 101, 1234):
        calls = [
            {
                "id": f"call_{j}",
                "type": "function",
                "function": {"name": "grep", "arguments": json.dumps({"q": gen.string()})},
            }
            for j in range(count)
        ]
        payload = {"model": "m", "messages": [{"role": "assistant", "tool_calls": calls}]}
        for live, reference in ADAPTERS["chat"]:
            assert_same(live, reference, payload)
        paths = {segment.path for segment in openai_chat.segments(payload)}
        last = f"messages[0].tool_calls[{count - 1}]"
        assert {f"{last}.id", f"{last}.function.name", f"{last}.function.arguments"} <= paths


def test_deep_bodies() -> None:
    gen = Gen(99)
    for _ in range(300):
        leaf = gen.deep()
        for kind, body in (
            ("chat", {"messages": [{"role": "user", "content": [leaf]}]}),
            (
                "chat",
                {"messages": [{"role": "tool", "tool_call_id": "c", "content": "x", "k": leaf}]},
            ),
            (
                "anthropic",
                {
                    "messages": [
                        {"role": "user", "content": [{"type": "tool_result", "content": leaf}]}
                    ]
                },
            ),
            ("responses", {"input": [{"type": "function_call", "arguments": leaf}]}),
            ("generic", leaf),
        ):
            for live, reference in ADAPTERS[kind]:
                assert_same(live, reference, body)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(STRINGS) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)
_roles = st.sampled_from(ROLES) | st.none() | st.integers()
_chat_messages = st.fixed_dictionaries(
    {"role": _roles, "content": st.sampled_from(STRINGS) | _json_values | st.none()},
    optional={
        "tool_calls": _json_values,
        "tool_call_id": st.sampled_from(STRINGS) | _json_values,
        "name": st.sampled_from(STRINGS),
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(_chat_messages | _json_values, max_size=6), extra=_json_values)
def test_hypothesis_chat(messages: list[Any], extra: object) -> None:
    body = {"model": "m", "messages": messages, "x": extra}
    for live, reference in EVERY:
        assert_same(live, reference, body)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=_json_values)
def test_hypothesis_any(payload: object) -> None:
    for live, reference in EVERY:
        assert_same(live, reference, payload)


def test_json_in_strings_past_the_cache_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strings too long or too nested to cache, and a cache emptied as it fills."""
    monkeypatch.setattr(generic, "_CACHE_CHARS_MAX", 2000)
    long = json.dumps({"api_key": "k" * 9000, "x": "\\u0041"})
    nested_text = "[" * 150 + '{"password": "p"}' + "]" * 150
    deep_text = "[" * 2000 + "]" * 2000
    gen = Gen(7)
    for text in [long, nested_text, deep_text, *(json.dumps(gen.value(3)) for _ in range(300))]:
        for body in (
            {"messages": [{"role": "tool", "tool_call_id": "c", "content": text}]},
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"name": "f", "arguments": text},
                            }
                        ],
                    }
                ]
            },
        ):
            for _ in range(2):
                for live, reference in ADAPTERS["chat"]:
                    assert_same(live, reference, body)


@pytest.mark.parametrize("bound", [1, 5, 20])
def test_segment_bound(monkeypatch: pytest.MonkeyPatch, bound: int) -> None:
    """Past MAX_SEGMENTS the same error at the same point: the fast paths append in place."""
    monkeypatch.setattr(generic, "MAX_SEGMENTS", bound)
    monkeypatch.setattr(ref_generic, "MAX_SEGMENTS", bound)
    gen = Gen(500 + bound)
    for n in range(800):
        kind = KINDS[n % len(KINDS)]
        payload = gen.body(kind)
        for live, reference in ADAPTERS[kind]:
            assert_same(live, reference, payload)


def test_long_conversations() -> None:
    """Past the messages whose paths are built in advance."""
    gen = Gen(77)
    for _ in range(4):
        count = gen.r.randint(500, 700)
        bodies = {
            # An unhashable role ends the chat walk early (TypeError), so none here.
            "chat": {
                "messages": [
                    m
                    for m in (gen.chat_message() for _ in range(count))
                    if not (isinstance(m, dict) and isinstance(m.get("role"), dict | list))
                ]
            },
            "anthropic": {"messages": [gen.anthropic_message() for _ in range(count)]},
            "responses": {"input": [gen.item() for _ in range(count)]},
            "conversation": {"items": [gen.item() for _ in range(count)]},
        }
        for kind, body in bodies.items():
            for live, reference in ADAPTERS[kind]:
                assert_same(live, reference, body)


# -- messages walked again: the parse memo hands a resent message's dict again --


@pytest.mark.parametrize("bound", [3, generic.MAX_SEGMENTS])
def test_resent_bodies(monkeypatch: pytest.MonkeyPatch, bound: int) -> None:
    """The same body objects walked three times: a kept message gives what a fresh walk gives."""
    monkeypatch.setattr(generic, "MAX_SEGMENTS", bound)
    monkeypatch.setattr(ref_generic, "MAX_SEGMENTS", bound)
    gen = Gen(911 + bound)
    for _ in range(300):
        body = {"messages": [gen.chat_message() for _ in range(gen.r.randint(1, 12))]}
        for _ in range(3):
            for live, reference in ADAPTERS["chat"]:
                assert_same(live, reference, body)


def _walk(walker: Any, messages: list[object], bound: int = 1000) -> object:
    def run() -> list[Segment]:
        out: list[Segment] = []
        walker.walk(messages, out, openai_chat._message, bound)
        return out

    return _outcome(run)


TOOL_TURN: list[object] = [
    {"role": "user", "content": "read the log"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "app.log"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "line one\nline two"},
]


def test_walker_keeps_from_the_second_walk() -> None:
    walker = openai_chat._walker(_chat)
    fresh = _walk(openai_chat._walker(_chat), copy.deepcopy(TOOL_TURN))
    walks = []
    for _ in range(3):
        out: list[Segment] = []
        walker.walk(TOOL_TURN, out, openai_chat._message, 1000)
        walks.append(out)
    first, second, third = walks
    assert [_outcome(lambda w=w: w) for w in walks] == [fresh] * 3
    assert len(third) == len(first) >= 4
    assert all(a is b for a, b in zip(second, third, strict=True))
    # A first walk keeps nothing (the arguments keep their own segments).
    assert first[0] is not second[0] and first[-1] is not second[-1]


def test_walker_keeps_by_place() -> None:
    """The same dict at another place is walked there: its own paths and index."""
    walker = openai_chat._walker(_chat)
    msg = {"role": "user", "content": "same words"}
    for messages in ([msg], [msg], [msg], [{"role": "system", "content": "s"}, msg], [msg, msg]):
        assert _walk(walker, messages) == _walk(openai_chat._walker(_chat), copy.deepcopy(messages))


def test_walker_keeps_no_long_message() -> None:
    walker = openai_chat._walker(_chat)
    long = [{"role": "tool", "tool_call_id": "call_1", "content": "x" * 20_000}]
    walks = []
    for _ in range(3):
        out: list[Segment] = []
        walker.walk(long, out, openai_chat._message, 1000)
        walks.append(out)
    assert walks[1][0] is not walks[2][0]
    assert walks[1][0].text == walks[2][0].text


def test_walker_kept_past_the_bound() -> None:
    """Kept segments that no longer fit take the walk that refuses them, as before."""
    walker = openai_chat._walker(_chat)
    for _ in range(3):
        _walk(walker, TOOL_TURN)
    for bound in range(6):
        expected = _walk(openai_chat._walker(_chat), copy.deepcopy(TOOL_TURN), bound)
        assert _walk(walker, TOOL_TURN, bound) == expected
