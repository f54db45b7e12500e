"""Anthropic Messages requests (``POST /v1/messages``, ``/v1/messages/count_tokens``),
and Message Batches (``POST /v1/messages/batches``), whose every request is one.

Read: ``system`` (a string or text blocks, role system) and every message's
content, a string or blocks: text (citations untrusted), image (URL source),
document (untrusted: text source, base64 source when it decodes to text, URL
source, content-block source, title, context), search_result (untrusted), thinking,
tool_use / server_tool_use / mcp_tool_use (every string of ``input``, keys
included, secret-named members as pairs, string leaves joined),
tool_result / mcp_tool_result and every server tool result block
(untrusted), compaction summaries, MCP tool listings (untrusted). Unknown block
types are scanned in full as untrusted. Also tool definitions, ``metadata``,
``stop_sequences``, MCP server definitions and any unknown top-level key. The
text blocks of one content list (and of ``system``) are also joined, for a
token split across them.

OPAQUE (the secret floor only): ids, ``model``, thinking ``signature``,
``redacted_thinking.data``, web search ``encrypted_content`` and the other
structural fields of :mod:`gateway.wire.generic`, unless they are known words.
Skipped: base64 sources whose bytes are binary (images, PDFs; a text document
sent as base64 is decoded).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gateway.wire.base import PayloadError, Segment, Trust
from gateway.wire.generic import (
    NAMES,
    PLAIN,
    ROLE_REQUEST,
    ROLE_SYSTEM,
    ROLE_TRUST,
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
    add_nested,
    add_opaque,
    add_string,
    join_parts,
    keys,
    member_path,
    walk_free,
    walk_known,
    walk_message,
    walk_typed,
)

_TOOL_USE = Spec(args=keys("input"))
_TOOL_RESULT = Spec(untrusted=keys("content"), typed=keys("content"))
_SERVER_RESULT = Spec(untrusted=keys("content"))

_REGISTRY: Registry = MappingProxyType(
    {
        "text": Spec(untrusted=keys("citations")),
        "image": PLAIN,
        "document": Spec(untrusted=keys("source", "title", "context")),
        # The source of an image or document block: PNGs and PDFs are skipped as
        # binary, a text document sent as base64 is decoded.
        "base64": Spec(base64=keys("data")),
        "search_result": Spec(untrusted=keys("content", "source", "title"), typed=keys("content")),
        "thinking": PLAIN,
        "redacted_thinking": Spec(opaque=keys("data")),
        "tool_use": _TOOL_USE,
        "server_tool_use": _TOOL_USE,
        "mcp_tool_use": _TOOL_USE,
        "tool_result": _TOOL_RESULT,
        "mcp_tool_result": _TOOL_RESULT,
        "web_search_tool_result": _SERVER_RESULT,
        "web_fetch_tool_result": _SERVER_RESULT,
        "code_execution_tool_result": _SERVER_RESULT,
        "bash_code_execution_tool_result": _SERVER_RESULT,
        "text_editor_code_execution_tool_result": _SERVER_RESULT,
        "tool_search_tool_result": _SERVER_RESULT,
        "advisor_tool_result": _SERVER_RESULT,
        "mcp_tool_listing": Spec(untrusted=keys("tools"), free=keys("tools")),
        "compaction": PLAIN,
        "container_upload": PLAIN,
        "tool_reference": PLAIN,
        "tool_addition": PLAIN,
        "tool_removal": PLAIN,
        "browser_state": PLAIN,
        "fallback": Spec(free=keys("trigger")),
    }
)

_KNOWN = keys(
    "max_tokens",
    "messages",
    "model",
    # Bedrock and Vertex AI name the API version in the body.
    "anthropic_version",
    "billing_policy",
    "cache_control",
    "compaction",
    "container",
    "context_management",
    "diagnostics",
    "fallback_credit_token",
    "fallbacks",
    "inference_geo",
    "mcp_servers",
    "metadata",
    "output_config",
    "service_tier",
    "speed",
    "stop_sequences",
    "stream",
    "system",
    "temperature",
    "thinking",
    "thread",
    "tool_choice",
    "tools",
    "top_k",
    "top_p",
    "user_profile_id",
    "workspace_id",
)
_OPAQUE = keys(
    "anthropic_version",
    "container",
    "inference_geo",
    "service_tier",
    "speed",
    "user_profile_id",
    "workspace_id",
)
_FREE = keys("metadata")


# Paths of the first messages, built once: a turn rebuilds them on every request.
_PRECOMPUTED = 512
_PATHS = tuple(f"messages[{i}]" for i in range(_PRECOMPUTED))
_CONTENT = tuple(f"{path}.content" for path in _PATHS)

_TOOL_RESULT_KEYS = frozenset({"type", "tool_use_id", "content"})
_TOOL_USE_KEYS = frozenset({"type", "id", "name", "input"})
_TEXT_KEYS = frozenset({"type", "text"})
# The fast path below writes what walk_spec would for these keys: it holds
# while they are field names that name no secret, ids are STRUCTURAL and
# `content`, `name` and `input` are not.
_FAST = (
    {"type", "id", "name", "input", "tool_use_id", "content", "text"} <= NAMES
    and not {"type", "id", "name", "input", "tool_use_id", "content", "text"} & SECRET_NAMES
    and {"type", "id", "tool_use_id"} <= STRUCTURAL
    and not {"name", "input", "content", "text"} & (STRUCTURAL | STRUCTURAL_LISTS)
    and {"tool_use", "tool_result", "text"} <= _REGISTRY.keys()
)


def _fast_blocks(
    blocks: list[object], path: str, role: str, trust: Trust, i: int, out: list[Segment]
) -> None:
    """A message's content blocks, as walk_message reads them (_walk_typed_member at depth 4).

    Text, tool_use with an object input and tool_result with string content,
    the blocks of nearly every agent turn, are written here as walk_typed and
    walk_spec would write them; any other block takes walk_typed itself
    (tests/wire/test_segments_differential.py holds the two equal).
    """
    for j, block in enumerate(blocks):
        at = f"{path}[{j}]"
        if isinstance(block, dict):
            kind = block.get("type")
            keys = block.keys()
            if kind == "text" and keys == _TEXT_KEYS:
                text = block["text"]
                if isinstance(text, str):
                    if text:
                        add_string(out, text, at + ".text", role, trust, i)
                    continue
            elif kind == "tool_result" and keys == _TOOL_RESULT_KEYS:
                call_id = block["tool_use_id"]
                content = block["content"]
                if isinstance(call_id, str) and isinstance(content, str):
                    for key in block:
                        if key == "tool_use_id":
                            if call_id and call_id not in WORDS and call_id not in _REGISTRY:
                                add_opaque(out, call_id, at + ".tool_use_id", role, i)
                        elif key == "content":
                            add_string(out, content, at + ".content", role, UNTRUSTED, i)
                    continue
            elif kind == "tool_use" and keys == _TOOL_USE_KEYS:
                call_id = block["id"]
                name = block["name"]
                given = block["input"]
                if isinstance(call_id, str) and isinstance(name, str) and isinstance(given, dict):
                    for key in block:
                        if key == "id":
                            if call_id and call_id not in WORDS and call_id not in _REGISTRY:
                                add_opaque(out, call_id, at + ".id", role, i)
                        elif key == "name":
                            add_string(out, name, at + ".name", role, trust, i)
                        elif key == "input":
                            add_arguments(out, given, at + ".input", role, trust, i, 6)
                    continue
        walk_typed(block, at, role, trust, i, out, 5, _REGISTRY)
    if len(blocks) > 1:
        join_parts(blocks, path, role, i, out)


def _messages(value: object, out: list[Segment]) -> None:
    assert isinstance(value, list)  # checked by segments()
    for i, msg in enumerate(value):
        path = _PATHS[i] if i < _PRECOMPUTED else f"messages[{i}]"
        if isinstance(msg, dict):
            if _FAST and len(msg) == 2:
                role = msg.get("role")
                trust = ROLE_TRUST.get(role) if isinstance(role, str) else None
                content = msg.get("content")
                if trust is not None and isinstance(content, list):
                    assert isinstance(role, str)
                    where = _CONTENT[i] if i < _PRECOMPUTED else path + ".content"
                    _fast_blocks(content, where, role, trust, i, out)
                    continue
            walk_message(msg, path, i, out, 3, _REGISTRY)
        else:
            walk_free(msg, path, ROLE_UNKNOWN, UNTRUSTED, i, out, 3)


def _system(value: object, out: list[Segment]) -> None:
    walk_known(value, "system", ROLE_SYSTEM, TRUSTED, None, out, 2, _REGISTRY)
    if isinstance(value, list) and len(value) > 1:
        join_parts(value, "system", ROLE_SYSTEM, None, out)


_SPECIAL: Mapping[str, TopHandler] = MappingProxyType({"messages": _messages, "system": _system})
_REQUEST = RequestSpec(_SPECIAL, _KNOWN, opaque=_OPAQUE, free=_FREE, registry=_REGISTRY)


def segments(payload: object) -> list[Segment]:
    if not isinstance(payload, dict):
        raise PayloadError("messages request body must be a JSON object")
    if not isinstance(payload.get("messages"), list):
        raise PayloadError("messages request needs `messages` as a list")
    return _REQUEST.segments(payload)


def batch_segments(payload: object) -> list[Segment]:
    """``POST /v1/messages/batches``: each ``requests[i].params`` is a messages request.

    Its tool results reach the model when the batch runs, so each is read by
    the messages adapter here, its paths under ``requests[i].params.``.
    """
    if not isinstance(payload, dict):
        raise PayloadError("message batch request body must be a JSON object")
    requests = payload.get("requests")
    if not isinstance(requests, list):
        raise PayloadError("message batch request needs `requests` as a list")
    out: list[Segment] = []
    for position, (key, value) in enumerate(payload.items()):
        if key == "requests":
            continue
        path = member_path(key, position, "", ROLE_UNKNOWN, UNTRUSTED, None, out)
        walk_free(value, path, ROLE_UNKNOWN, UNTRUSTED, None, out, 2)
    for i, request in enumerate(requests):
        if not isinstance(request, dict):
            raise PayloadError(f"requests[{i}] must be a JSON object")
        at = f"requests[{i}]."
        for position, (key, value) in enumerate(request.items()):
            if key == "params":
                try:
                    inner = segments(value)
                except PayloadError as exc:
                    raise PayloadError(f"requests[{i}].params: {exc}") from exc
                add_nested(out, inner, at + "params.")
            elif key == "custom_id" and isinstance(value, str):
                add_opaque(out, value, at + key, ROLE_REQUEST, None)
            else:
                path = member_path(key, position, at, ROLE_UNKNOWN, UNTRUSTED, None, out)
                walk_free(value, path, ROLE_UNKNOWN, UNTRUSTED, None, out, 3)
    return out
