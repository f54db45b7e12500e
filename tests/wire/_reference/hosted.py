"""Model requests through the cloud platforms' own endpoints: AWS Bedrock and Google Vertex AI.

The same conversation, tool results included, arrives under another path:

- Bedrock InvokeModel (``/model/{id}/invoke``, ``/invoke-with-response-stream``)
  and Vertex ``...:rawPredict`` / ``:streamRawPredict`` carry the model
  provider's own body: an Anthropic Messages request (it names its
  ``anthropic_version``) or an OpenAI-style chat (``messages``), read by those
  adapters; any other body by the generic one.
- Bedrock Converse (``/model/{id}/converse``, ``/converse-stream``) has its own
  shape: messages whose content blocks are keyed by kind (``text``,
  ``toolUse``, ``toolResult``, ``document``, ``image``, ...). Tool results and
  documents are untrusted, tool inputs are read as a tool call's arguments,
  ``bytes`` payloads as base64.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gateway.wire.base import Segment, Trust
from tests.wire._reference import anthropic, generic, openai_chat
from tests.wire._reference.generic import (
    PLAIN,
    ROLE_SYSTEM,
    ROLE_UNKNOWN,
    TRUSTED,
    UNTRUSTED,
    RequestSpec,
    Spec,
    TopHandler,
    add_text,
    join_parts,
    keys,
    message_role,
    walk_free,
    walk_spec,
)


def invoke_segments(payload: object) -> list[Segment]:
    """Bedrock InvokeModel and Vertex rawPredict: the provider's body, by its shape."""
    if isinstance(payload, dict) and isinstance(payload.get("messages"), list):
        if "anthropic_version" in payload:
            return anthropic.segments(payload)
        return openai_chat.segments(payload)
    return generic.segments(payload)


_BYTES = Spec(nested=MappingProxyType({"source": Spec(base64=keys("bytes"))}))
# A content block is an object with one key naming its kind.
_BLOCK = Spec(
    untrusted=keys("toolResult", "document"),
    nested=MappingProxyType(
        {
            "toolUse": Spec(args=keys("input")),
            "image": _BYTES,
            "video": _BYTES,
            "document": _BYTES,
            "reasoningContent": Spec(opaque=keys("redactedContent")),
        }
    ),
)
_REGISTRY: Mapping[str, Spec] = MappingProxyType({})

_KNOWN = keys(
    "messages",
    "system",
    "modelId",
    "toolConfig",
    "inferenceConfig",
    "additionalModelRequestFields",
    "additionalModelResponseFieldPaths",
    "guardrailConfig",
    "performanceConfig",
    "promptVariables",
    "requestMetadata",
)
_OPAQUE = keys("modelId")
_FREE = keys("requestMetadata", "additionalModelRequestFields")


def _blocks(
    blocks: object, path: str, role: str, trust: Trust, index: int | None, out: list[Segment]
) -> None:
    if not isinstance(blocks, list):
        walk_free(blocks, path, role, UNTRUSTED, index, out, 4)
        return
    for j, block in enumerate(blocks):
        at = f"{path}[{j}]"
        if isinstance(block, dict):
            walk_spec(block, _BLOCK, at, role, trust, index, out, 4, _REGISTRY)
        else:
            walk_free(block, at, role, UNTRUSTED, index, out, 4)
    if len(blocks) > 1:
        join_parts(blocks, path, role, index, out)


def _messages(value: object, out: list[Segment]) -> None:
    if not isinstance(value, list):
        walk_free(value, "messages", ROLE_UNKNOWN, UNTRUSTED, None, out, 2)
        return
    for i, msg in enumerate(value):
        path = f"messages[{i}]"
        if not isinstance(msg, dict):
            walk_free(msg, path, ROLE_UNKNOWN, UNTRUSTED, i, out, 3)
            continue
        raw_role = msg.get("role")
        role, trust = message_role(raw_role)
        if role == ROLE_UNKNOWN and isinstance(raw_role, str):
            # An unknown role is text the model reads, never a label.
            add_text(out, raw_role, path + ".role", role, UNTRUSTED, i)
        rest = {key: item for key, item in msg.items() if key not in ("role", "content")}
        walk_spec(rest, PLAIN, path, role, trust, i, out, 3, _REGISTRY)
        if "content" in msg:
            _blocks(msg["content"], path + ".content", role, trust, i, out)


def _system(value: object, out: list[Segment]) -> None:
    _blocks(value, "system", ROLE_SYSTEM, TRUSTED, None, out)


_SPECIAL: Mapping[str, TopHandler] = MappingProxyType({"messages": _messages, "system": _system})
_REQUEST = RequestSpec(_SPECIAL, _KNOWN, opaque=_OPAQUE, free=_FREE, registry=_REGISTRY)


def converse_segments(payload: object) -> list[Segment]:
    """Bedrock Converse; any other shape is read by the generic adapter."""
    if not isinstance(payload, dict):
        return generic.segments(payload)
    return _REQUEST.segments(payload)
