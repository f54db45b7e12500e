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
from typing import Any, Final

from gateway import compiled
from gateway.wire import generic
from gateway.wire.base import NOTHING_EXPECTED, PayloadError, Segment, Trust
from gateway.wire.generic import (
    JSON_HEADS,
    OPAQUE,
    PLAIN,
    ROLE_TRUST,
    ROLE_UNKNOWN,
    TRUSTED,
    UNTRUSTED,
    WORDS,
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

_REGISTRY: Final[Registry] = MappingProxyType(
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

_KNOWN: Final = keys(
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
_OPAQUE: Final = keys(
    "service_tier", "reasoning_effort", "prompt_cache_retention", "tool_choice", "function_call"
)
_FREE: Final = keys("metadata", "logit_bias")


_TOOL_RESULT_KEYS: Final = frozenset({"role", "tool_call_id", "content"})
_TOOL_CALLING_KEYS: Final = frozenset({"role", "content", "tool_calls"})
_CALL_KEYS: Final = frozenset({"id", "type", "function"})
_FUNCTION_KEYS: Final = frozenset({"name", "arguments"})
# Where the fast path's tool arguments sit in the general walk.
_ARGUMENTS_DEPTH: Final = 7


# Paths of the first messages, built once: a turn rebuilds them on every request.
_PRECOMPUTED: Final = 512
_PATHS: Final = tuple(f"messages[{i}]" for i in range(_PRECOMPUTED))
_CONTENT: Final = tuple(f"{path}.content" for path in _PATHS)
_CALL_ID: Final = tuple(f"{path}.tool_call_id" for path in _PATHS)
# ROLE_TRUST as a plain dict, read once per message.
_TRUST: Final[dict[object, Trust]] = dict(ROLE_TRUST)


def _fast_message(msg: dict[str, object], i: int, out: list[Segment]) -> bool:
    """The shapes that make up nearly every agent turn, without the general walk.

    Each produces exactly the segments the general walk would, in the same
    order (tests/wire/test_segments_differential.py holds them equal);
    anything else returns False and takes the general walk.
    """
    role = msg.get("role")
    content = msg.get("content")
    if len(msg) == 2:
        if isinstance(content, str):
            trust = _TRUST.get(role) if isinstance(role, str) else None
            if trust is not None:
                assert isinstance(role, str)
                if content:
                    path = _CONTENT[i] if i < _PRECOMPUTED else f"messages[{i}].content"
                    add_string(out, content, path, role, trust, i)
                return True
        return False
    if len(msg) != 3:
        return False
    if role == "tool":
        if not (msg.keys() == _TOOL_RESULT_KEYS and isinstance(content, str)):
            return False
        call_id = msg["tool_call_id"]
        if not isinstance(call_id, str):
            return False
        if i < _PRECOMPUTED:
            content_path, id_path = _CONTENT[i], _CALL_ID[i]
        else:
            content_path, id_path = f"messages[{i}].content", f"messages[{i}].tool_call_id"
        for key in msg:
            if key == "content":
                add_string(out, content, content_path, "tool", UNTRUSTED, i)
            elif key == "tool_call_id":
                add_opaque(out, call_id, id_path, "tool", i)
        return True
    if (
        role == "assistant"
        and msg.keys() == _TOOL_CALLING_KEYS
        and (content is None or isinstance(content, str))
    ):
        calls = msg["tool_calls"]
        if not isinstance(calls, list):
            return False
        path = _PATHS[i] if i < _PRECOMPUTED else f"messages[{i}]"
        # The calls are checked as they are written; what was written is taken
        # back when one is not plain, or past the segment bound (where the
        # general walk, run from the same point, raises as it always has).
        mark = len(out)
        try:
            for key in msg:
                if key == "content":
                    if content:
                        assert isinstance(content, str)
                        add_string(out, content, path + ".content", "assistant", TRUSTED, i)
                elif key == "tool_calls" and not _fast_calls(calls, path + ".tool_calls", i, out):
                    del out[mark:]
                    return False
        except PayloadError:
            del out[mark:]
            return False
        return True
    return False


def _fast_calls(calls: list[object], path: str, i: int, out: list[Segment]) -> bool:
    """Tool calls exactly as SDKs send them (every field known, every value a string),
    written; False at the first that is not."""
    for j, call in enumerate(calls):
        if not (isinstance(call, dict) and call.keys() == _CALL_KEYS):
            return False
        fn = call["function"]
        call_id = call["id"]
        if not (
            call["type"] == "function"
            and isinstance(call_id, str)
            and isinstance(fn, dict)
            and fn.keys() == _FUNCTION_KEYS
        ):
            return False
        name = fn["name"]
        arguments = fn["arguments"]
        if not (isinstance(name, str) and isinstance(arguments, str)):
            return False
        at = f"{path}[{j}]"
        for key in call:
            if key == "id":
                add_opaque(out, call_id, at + ".id", "assistant", i)
            elif key == "function":
                for member in fn:
                    if member == "name":
                        add_string(out, name, at + ".function.name", "assistant", TRUSTED, i)
                    else:
                        add_arguments(
                            out,
                            arguments,
                            at + ".function.arguments",
                            "assistant",
                            TRUSTED,
                            i,
                            _ARGUMENTS_DEPTH,
                        )
    return True


def _message(msg: object, i: int, out: list[Segment]) -> None:
    """One message of the conversation, by the general walk where no fast path fits."""
    if isinstance(msg, dict):
        if len(msg) == 2 and i < _PRECOMPUTED:
            role = msg.get("role")
            content = msg.get("content")
            if isinstance(content, str) and isinstance(role, str):
                trust = _TRUST.get(role)
                if trust is not None:
                    add_string(out, content, _CONTENT[i], role, trust, i)
                    return
        if not _fast_message(msg, i, out):
            path = _PATHS[i] if i < _PRECOMPUTED else f"messages[{i}]"
            walk_message(msg, path, i, out, 3, _REGISTRY)
    else:
        path = _PATHS[i] if i < _PRECOMPUTED else f"messages[{i}]"
        walk_free(msg, path, ROLE_UNKNOWN, UNTRUSTED, i, out, 3)


def _messages(value: object, out: list[Segment]) -> None:
    assert isinstance(value, list)  # checked by segments()
    if _WALKER is not None and type(value) is list:
        _WALKER.walk(value, out, _message, generic.MAX_SEGMENTS)
        return
    for i, msg in enumerate(value):
        if isinstance(msg, dict) and len(msg) == 2 and i < _PRECOMPUTED:
            # The commonest message, plain text of a known role, written
            # here without a call: what _message and add_string do.
            role = msg.get("role")
            content = msg.get("content")
            if isinstance(content, str) and isinstance(role, str):
                trust = _TRUST.get(role)
                if trust is not None:
                    if not content:
                        continue
                    if (
                        content[0] not in JSON_HEADS
                        and not content.startswith("data:")
                        and len(out) < generic.MAX_SEGMENTS
                    ):
                        out.append(Segment(_CONTENT[i], role, content, trust, i))
                        continue
        _message(msg, i, out)


def _walker(
    module: Any, segment: type = Segment, expected: frozenset[str] = NOTHING_EXPECTED
) -> Any:
    """The compiled walk of the common messages (`_chat.c`), when it is built.

    An interpreted Segment is built slot by slot as its __init__ does (so a
    Segment whose __init__ did more would not be built the same); a compiled
    one is called. The tests pass an interpreted twin to reach the first way
    in a build where the Segment is compiled.
    """
    if module is None:
        return None
    return module.Walker(
        segment=segment,
        expected=expected,
        paths=_PATHS,
        content_paths=_CONTENT,
        call_id_paths=_CALL_ID,
        trust=_TRUST,
        trusted=TRUSTED,
        untrusted=UNTRUSTED,
        opaque=OPAQUE,
        words=WORDS,
        add_arguments=add_arguments,
        depth=_ARGUMENTS_DEPTH,
        payload_error=PayloadError,
        heads="".join(sorted(JSON_HEADS)),
    )


_WALKER: Final = _walker(compiled.load("gateway.wire._chat"))


_SPECIAL: Final[Mapping[str, TopHandler]] = MappingProxyType({"messages": _messages})
_REQUEST: Final = RequestSpec(_SPECIAL, _KNOWN, opaque=_OPAQUE, free=_FREE, registry=_REGISTRY)


def segments(payload: object) -> list[Segment]:
    if not isinstance(payload, dict):
        raise PayloadError("chat completion request body must be a JSON object")
    if not isinstance(payload.get("messages"), list):
        raise PayloadError("chat completion request needs `messages` as a list")
    return _REQUEST.segments(payload)
