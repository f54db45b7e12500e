"""OpenAI Responses requests (``POST /v1/responses``, ``/input_tokens``, ``/compact``),
and the items of the Conversations API.

Read: ``instructions`` (role system); ``input`` as a string (role user) or as a
list of items. Message items (easy or full, any known role) use the message's
role; every other registered item uses its ``type`` as the role, and an
unknown item type is labelled ``unknown`` (its value scanned as text). Calls
the model made (function, custom tool, computer, shell, apply_patch, MCP
arguments, reasoning summaries) are trusted; what came back from outside
(function/custom tool outputs, shell and computer outputs, file search
results, code interpreter outputs, MCP outputs and tool listings, tool search
outputs) is untrusted. Unknown item types are scanned in full as untrusted.
``arguments`` of every call are also read as JSON: secret-named members as
pairs, string leaves joined. The text parts of one content list are joined.

Also read: tool definitions, ``tool_choice``, ``metadata``, ``prompt.variables``,
``text.format`` schemas, and any unknown top-level key.

OPAQUE (the secret floor only): ids, ``model``, ``previous_response_id``,
``conversation``, reasoning and compaction ``encrypted_content``, a program's
``fingerprint``, ``detail``, ``include`` and the other enum-valued fields,
unless they are known words; ``output_text.logprobs`` as one segment (the
same text, token by token). Skipped: base64 payloads whose bytes are binary
(``input_audio.data``, ``input_file.file_data``, image data: URLs,
``image_generation_call.result``; a text file is decoded and scanned,
untrusted).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gateway.wire.base import PayloadError, Segment
from gateway.wire.generic import (
    NAMES,
    PLAIN,
    ROLE_SYSTEM,
    ROLE_UNKNOWN,
    SECRET_NAMES,
    STRUCTURAL,
    STRUCTURAL_LISTS,
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
    free_members,
    join_parts,
    keys,
    walk_free,
    walk_known,
    walk_message,
    walk_spec,
)
from gateway.wire.generic import segments as generic_segments

_OUTPUT = Spec(untrusted=keys("output"))
_PARTS_OUTPUT = Spec(untrusted=keys("output"), typed=keys("output"))

_REGISTRY: Registry = MappingProxyType(
    {
        # content parts
        "input_text": PLAIN,
        "output_text": Spec(untrusted=keys("annotations"), tokens=keys("logprobs")),
        "refusal": PLAIN,
        "input_image": Spec(opaque=keys("detail")),
        "input_file": Spec(
            base64=keys("file_data"), opaque=keys("detail"), untrusted=keys("file_data")
        ),
        "input_audio": Spec(nested=MappingProxyType({"input_audio": Spec(base64=keys("data"))})),
        # items the model produced
        "function_call": PLAIN,
        "custom_tool_call": PLAIN,
        "computer_call": PLAIN,
        "web_search_call": PLAIN,
        "reasoning": PLAIN,
        "compaction": PLAIN,
        "compaction_trigger": PLAIN,
        "local_shell_call": PLAIN,
        "shell_call": PLAIN,
        "apply_patch_call": PLAIN,
        "mcp_approval_request": PLAIN,
        "mcp_approval_response": PLAIN,
        # `arguments`, JSON text or an object, is always read as a tool call's.
        "tool_search_call": PLAIN,
        "image_generation_call": Spec(base64=keys("result")),
        "program": Spec(opaque=keys("fingerprint")),
        "additional_tools": PLAIN,
        "configuration_update": PLAIN,
        "item_reference": PLAIN,
        # items that came back from outside the agent
        "function_call_output": _PARTS_OUTPUT,
        "custom_tool_call_output": _PARTS_OUTPUT,
        "computer_call_output": _OUTPUT,
        "local_shell_call_output": _OUTPUT,
        "shell_call_output": _OUTPUT,
        "apply_patch_call_output": _OUTPUT,
        "file_search_call": Spec(untrusted=keys("results"), free=keys("results")),
        "code_interpreter_call": Spec(untrusted=keys("outputs")),
        "mcp_call": Spec(untrusted=keys("output", "error"), free=keys("error")),
        "mcp_list_tools": Spec(untrusted=keys("tools", "error"), free=keys("tools")),
        "tool_search_output": Spec(untrusted=keys("tools")),
        "program_output": Spec(untrusted=keys("result")),
    }
)

_KNOWN = keys(
    "access_programs",
    "background",
    "background_options",
    "context_management",
    "conversation",
    "image",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "moderation",
    "parallel_tool_calls",
    "personality",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
)
_OPAQUE = keys(
    "conversation",
    "previous_response_id",
    "prompt_cache_retention",
    "service_tier",
    "tool_choice",
    "truncation",
)
_FREE = keys("metadata")
_CONVERSATION_KNOWN = keys("items", "metadata")


# Paths of the first input items, built once: a turn rebuilds them on every request.
_PRECOMPUTED = 512
_INPUT_PATHS = tuple(f"input[{i}]" for i in range(_PRECOMPUTED))

# Function calls and their outputs whose every value is a string: written here
# as walk_spec would write them (tests/wire/test_segments_differential.py
# holds the two equal). The guard turns the shortcut off should the
# vocabulary stop backing it: every key a field name naming no secret, the
# ids and enums STRUCTURAL, the rest not.
_CALL_KEYS = frozenset({"type", "id", "call_id", "name", "arguments", "status"})
_OUTPUT_KEYS = frozenset({"type", "id", "call_id", "output", "status"})
_IDS = frozenset({"type", "id", "call_id", "status"})
_FAST = (
    (_CALL_KEYS | _OUTPUT_KEYS) <= NAMES
    and not (_CALL_KEYS | _OUTPUT_KEYS) & SECRET_NAMES
    and _IDS <= STRUCTURAL
    and not {"name", "arguments", "output"} & (STRUCTURAL | STRUCTURAL_LISTS)
    and _REGISTRY["function_call"] == PLAIN
    and _REGISTRY["function_call_output"] == _PARTS_OUTPUT
)


def _fast_call(item: dict[str, object], kind: str, at: str, i: int, out: list[Segment]) -> bool:
    allowed = _CALL_KEYS if kind == "function_call" else _OUTPUT_KEYS
    if not item.keys() <= allowed:
        return False
    for value in item.values():
        if not isinstance(value, str):
            return False
    for key, value in item.items():
        assert isinstance(value, str)
        if not value:
            continue
        if key in _IDS:
            if value not in WORDS and value not in _REGISTRY:
                add_opaque(out, value, f"{at}.{key}", kind, i)
        elif key == "name":
            add_string(out, value, at + ".name", kind, TRUSTED, i)
        elif key == "arguments":
            add_arguments(out, value, at + ".arguments", kind, TRUSTED, i, 4)
        else:
            add_string(out, value, at + ".output", kind, UNTRUSTED, i)
    return True


def _items(items: list[object], out: list[Segment], name: str = "input") -> None:
    for i, item in enumerate(items):
        path = _INPUT_PATHS[i] if name == "input" and i < _PRECOMPUTED else f"{name}[{i}]"
        if not isinstance(item, dict):
            walk_free(item, path, ROLE_UNKNOWN, UNTRUSTED, i, out, 3)
            continue
        kind = item.get("type")
        if kind == "message" or (kind is None and "role" in item):
            walk_message(item, path, i, out, 3, _REGISTRY)
            continue
        if kind is None:
            # item_reference may omit its type.
            walk_spec(item, PLAIN, path, "item_reference", TRUSTED, i, out, 3, _REGISTRY)
            continue
        if (
            _FAST
            and (kind == "function_call" or kind == "function_call_output")
            and _fast_call(item, kind, path, i, out)
        ):
            continue
        spec = _REGISTRY.get(kind) if isinstance(kind, str) else None
        if spec is None:
            free_members(item, path, ROLE_UNKNOWN, UNTRUSTED, i, out, 3, skip_type=True)
        else:
            assert isinstance(kind, str)
            walk_spec(item, spec, path, kind, TRUSTED, i, out, 3, _REGISTRY)


def _input(value: object, out: list[Segment]) -> None:
    if isinstance(value, str):
        add_string(out, value, "input", "user", TRUSTED, None)
    elif isinstance(value, list):
        _items(value, out)


def _instructions(value: object, out: list[Segment]) -> None:
    walk_known(value, "instructions", ROLE_SYSTEM, TRUSTED, None, out, 2, _REGISTRY)
    if isinstance(value, list) and len(value) > 1:
        join_parts(value, "instructions", ROLE_SYSTEM, None, out)


_SPECIAL: Mapping[str, TopHandler] = MappingProxyType(
    {"input": _input, "instructions": _instructions}
)
_REQUEST = RequestSpec(_SPECIAL, _KNOWN, opaque=_OPAQUE, free=_FREE, registry=_REGISTRY)


def segments(payload: object) -> list[Segment]:
    if not isinstance(payload, dict):
        raise PayloadError("responses request body must be a JSON object")
    value = payload.get("input")
    if value is not None and not isinstance(value, str | list):
        raise PayloadError("responses request needs `input` as a string or a list")
    return _REQUEST.segments(payload)


def _conversation_items(value: object, out: list[Segment]) -> None:
    assert isinstance(value, list)  # checked by conversation_segments()
    _items(value, out, "items")


_CONVERSATION_SPECIAL: Mapping[str, TopHandler] = MappingProxyType({"items": _conversation_items})
_CONVERSATION_REQUEST = RequestSpec(
    _CONVERSATION_SPECIAL, _CONVERSATION_KNOWN, free=_FREE, registry=_REGISTRY
)


def conversation_segments(payload: object) -> list[Segment]:
    """``POST /v1/conversations`` and ``/v1/conversations/{id}/items``: Responses items.

    Items stored here reach the model later by reference, never in a Responses
    request, so this is where their tool outputs are seen. Any other shape is
    read by the generic adapter rather than refused.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("items"), list):
        return generic_segments(payload)
    return _CONVERSATION_REQUEST.segments(payload)
