"""OpenAI Chat Completions requests (``POST /v1/chat/completions``).

Every message of every role is read: ``content`` as a string or typed parts
(text parts also joined, for a token split across them), ``name``,
``refusal``, assistant ``tool_calls`` (function name; the ``arguments``
string as text, with its secret-named members as pairs and its string
leaves joined; custom tool ``input``), legacy ``function_call``, and any
other key a compatible server accepts (``reasoning_content``, ...). Messages
with a role other than system/developer/user/assistant (``tool``,
``function``, Llama's ``ipython``, unknown roles) are untrusted: they carry
tool results from outside the agent's trust boundary. An unknown role is
labelled ``unknown``, its value scanned as text.

Ids (``tool_call_id``, tool call ``id``), ``model`` and enum values outside
the known vocabulary are OPAQUE segments. Binary payloads are skipped when
their bytes are binary: ``input_audio.data``, ``file.file_data`` and image
data: URLs. A text file sent as ``file_data`` is decoded and scanned,
untrusted like any document. See :mod:`gateway.wire.generic` for these rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gateway.wire.base import PayloadError, Segment
from tests.wire._reference.generic import (
    PLAIN,
    ROLE_TRUST,
    ROLE_UNKNOWN,
    TRUSTED,
    UNTRUSTED,
    Registry,
    RequestSpec,
    Spec,
    TopHandler,
    add_arguments,
    add_opaque,
    add_string,
    keys,
    walk_free,
    walk_message,
)

_REGISTRY: Registry = MappingProxyType(
    {
        "text": PLAIN,
        "refusal": PLAIN,
        "image_url": Spec(nested=MappingProxyType({"image_url": Spec(opaque=keys("detail"))})),
        "input_audio": Spec(nested=MappingProxyType({"input_audio": Spec(base64=keys("data"))})),
        "file": Spec(
            nested=MappingProxyType(
                {"file": Spec(base64=keys("file_data"), untrusted=keys("file_data"))}
            )
        ),
    }
)

_KNOWN = keys(
    "messages",
    "model",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
)
# Enum-valued while strings: `tool_choice` and `function_call` may also be objects.
_OPAQUE = keys(
    "service_tier", "reasoning_effort", "prompt_cache_retention", "tool_choice", "function_call"
)
_FREE = keys("metadata", "logit_bias")


_TOOL_RESULT_KEYS = frozenset({"role", "tool_call_id", "content"})
_TOOL_CALLING_KEYS = frozenset({"role", "content", "tool_calls"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
# Where the fast path's tool arguments sit in the general walk.
_ARGUMENTS_DEPTH = 7


def _plain_tool_calls(calls: object) -> bool:
    """Tool calls exactly as SDKs send them: every field known, every value a string."""
    if not isinstance(calls, list):
        return False
    for call in calls:
        if not (isinstance(call, dict) and call.keys() == _CALL_KEYS):
            return False
        fn = call["function"]
        if not (
            call["type"] == "function"
            and isinstance(call["id"], str)
            and isinstance(fn, dict)
            and fn.keys() == _FUNCTION_KEYS
            and isinstance(fn["name"], str)
            and isinstance(fn["arguments"], str)
        ):
            return False
    return True


def _fast_message(msg: dict[str, object], i: int, out: list[Segment]) -> bool:
    """The shapes that make up nearly every agent turn, without the general walk.

    Each produces exactly the segments the general walk would, in the same
    order (a test holds them equal); anything else returns False and takes
    the general walk.
    """
    role = msg.get("role")
    content = msg.get("content")
    path = f"messages[{i}]"
    if len(msg) == 2 and isinstance(content, str) and isinstance(role, str) and role in ROLE_TRUST:
        assert isinstance(role, str)
        add_string(out, content, f"{path}.content", role, ROLE_TRUST[role], i)
        return True
    keys = msg.keys()
    if role == "tool" and keys == _TOOL_RESULT_KEYS and isinstance(content, str):
        call_id = msg["tool_call_id"]
        if not isinstance(call_id, str):
            return False
        for key in msg:
            if key == "content":
                add_string(out, content, f"{path}.content", "tool", UNTRUSTED, i)
            elif key == "tool_call_id":
                add_opaque(out, call_id, f"{path}.tool_call_id", "tool", i)
        return True
    if (
        role == "assistant"
        and keys == _TOOL_CALLING_KEYS
        and (content is None or isinstance(content, str))
    ):
        calls = msg["tool_calls"]
        if not _plain_tool_calls(calls):
            return False
        assert isinstance(calls, list)
        for key in msg:
            if key == "content":
                if content:
                    add_string(out, content, f"{path}.content", "assistant", TRUSTED, i)
            elif key == "tool_calls":
                _fast_calls(calls, f"{path}.tool_calls", i, out)
        return True
    return False


def _fast_calls(calls: list[dict[str, Any]], path: str, i: int, out: list[Segment]) -> None:
    for j, call in enumerate(calls):
        at = f"{path}[{j}]"
        for key in call:
            if key == "id":
                add_opaque(out, call["id"], f"{at}.id", "assistant", i)
            elif key == "function":
                fn = call["function"]
                for name in fn:
                    if name == "name":
                        add_string(out, fn["name"], f"{at}.function.name", "assistant", TRUSTED, i)
                    else:
                        add_arguments(
                            out,
                            fn["arguments"],
                            f"{at}.function.arguments",
                            "assistant",
                            TRUSTED,
                            i,
                            _ARGUMENTS_DEPTH,
                        )


def _messages(value: object, out: list[Segment]) -> None:
    assert isinstance(value, list)  # checked by segments()
    for i, msg in enumerate(value):
        if isinstance(msg, dict):
            if not _fast_message(msg, i, out):
                walk_message(msg, f"messages[{i}]", i, out, 3, _REGISTRY)
        else:
            walk_free(msg, f"messages[{i}]", ROLE_UNKNOWN, UNTRUSTED, i, out, 3)


_SPECIAL: Mapping[str, TopHandler] = MappingProxyType({"messages": _messages})
_REQUEST = RequestSpec(_SPECIAL, _KNOWN, opaque=_OPAQUE, free=_FREE, registry=_REGISTRY)


def segments(payload: object) -> list[Segment]:
    if not isinstance(payload, dict):
        raise PayloadError("chat completion request body must be a JSON object")
    if not isinstance(payload.get("messages"), list):
        raise PayloadError("chat completion request needs `messages` as a list")
    return _REQUEST.segments(payload)
