"""Anthropic Messages requests (``POST /v1/messages``, ``/v1/messages/count_tokens``).

Read: ``system`` (a string or text blocks, role system) and every message's
content, a string or blocks: text (citations untrusted), image (URL source),
document (untrusted: text source, base64 source when it decodes to text, URL
source, content-block source, title, context), search_result (untrusted), thinking,
tool_use / server_tool_use / mcp_tool_use (every string of ``input``, keys
included), tool_result / mcp_tool_result and every server tool result block
(untrusted), compaction summaries, MCP tool listings (untrusted). Unknown block
types are scanned in full as untrusted. Also tool definitions, ``metadata``,
``stop_sequences``, MCP server definitions and any unknown top-level key.

Skipped: base64 sources whose bytes are binary (images, PDFs; a text document
sent as base64 is decoded), ``redacted_thinking.data``, and the structural
fields listed in :mod:`gateway.wire.generic` (which include thinking
``signature`` and web search ``encrypted_content``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gateway.wire.base import PayloadError, Segment
from gateway.wire.generic import (
    PLAIN,
    ROLE_SYSTEM,
    ROLE_UNKNOWN,
    TRUSTED,
    UNTRUSTED,
    Registry,
    Spec,
    TopHandler,
    keys,
    walk_free,
    walk_known,
    walk_message,
    walk_request,
)

_TOOL_USE = Spec(free=keys("input"))
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
        "redacted_thinking": Spec(skip=keys("data")),
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
_SKIP = keys(
    "container", "inference_geo", "service_tier", "speed", "user_profile_id", "workspace_id"
)
_FREE = keys("metadata")


def _messages(value: object, out: list[Segment]) -> None:
    assert isinstance(value, list)  # checked by segments()
    for i, msg in enumerate(value):
        path = f"messages[{i}]"
        if isinstance(msg, dict):
            walk_message(msg, path, i, out, 3, _REGISTRY)
        else:
            walk_free(msg, path, ROLE_UNKNOWN, UNTRUSTED, i, out, 3)


def _system(value: object, out: list[Segment]) -> None:
    walk_known(value, "system", ROLE_SYSTEM, TRUSTED, None, out, 2, _REGISTRY)


_SPECIAL: Mapping[str, TopHandler] = MappingProxyType({"messages": _messages, "system": _system})


def segments(payload: object) -> list[Segment]:
    if not isinstance(payload, dict):
        raise PayloadError("messages request body must be a JSON object")
    if not isinstance(payload.get("messages"), list):
        raise PayloadError("messages request needs `messages` as a list")
    out: list[Segment] = []
    walk_request(
        payload,
        out,
        special=_SPECIAL,
        known=_KNOWN,
        skip=_SKIP,
        free=_FREE,
        registry=_REGISTRY,
    )
    return out
