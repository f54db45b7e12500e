"""OpenAI Assistants requests that carry conversation: threads, messages, runs, tool outputs.

- ``POST /v1/threads``: ``messages`` (role user or assistant), tool resources, metadata;
- ``POST /v1/threads/runs``: a run with a new ``thread`` (the same shape);
- ``POST /v1/threads/{id}/messages``: the body is one message;
- ``POST /v1/threads/{id}/runs``: ``additional_messages``, ``instructions`` and
  ``additional_instructions`` (role system);
- ``POST /v1/threads/{id}/runs/{id}/submit_tool_outputs``: ``tool_outputs[].output``
  is what the tools returned, untrusted (role tool) and checked for injection.

A message's content is a string or parts (text, image_url, image_file), read
as the chat adapter reads them; unknown part types are scanned in full as
untrusted. Ids (``assistant_id``, ``tool_call_id``, ``file_id``) and ``model``
are OPAQUE segments, and any unknown key is scanned as untrusted, so a body
of another shape is read in full rather than refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gateway.wire.base import Segment
from gateway.wire.generic import (
    PLAIN,
    ROLE_SYSTEM,
    ROLE_UNKNOWN,
    TRUSTED,
    UNTRUSTED,
    Registry,
    RequestSpec,
    Spec,
    TopHandler,
    join_parts,
    keys,
    walk_free,
    walk_known,
    walk_message,
    walk_spec,
)
from gateway.wire.generic import segments as generic_segments

_REGISTRY: Registry = MappingProxyType(
    {
        "text": PLAIN,
        "image_url": Spec(nested=MappingProxyType({"image_url": Spec(opaque=keys("detail"))})),
        "image_file": Spec(nested=MappingProxyType({"image_file": Spec(opaque=keys("detail"))})),
    }
)

ROLE_TOOL = "tool"

_THREAD_KNOWN = keys("messages", "metadata", "tool_resources")
_RUN_KNOWN = keys(
    "assistant_id",
    "additional_instructions",
    "additional_messages",
    "include",
    "instructions",
    "max_completion_tokens",
    "max_prompt_tokens",
    "metadata",
    "model",
    "parallel_tool_calls",
    "reasoning_effort",
    "response_format",
    "stream",
    "temperature",
    "thread",
    "tool_choice",
    "tool_resources",
    "tools",
    "top_p",
    "truncation_strategy",
)
_OUTPUTS_KNOWN = keys("tool_outputs", "stream")
_OPAQUE = keys("assistant_id", "reasoning_effort", "tool_choice")
_FREE = keys("metadata")


def _messages(value: object, out: list[Segment], name: str) -> None:
    if not isinstance(value, list):
        walk_free(value, name, ROLE_UNKNOWN, UNTRUSTED, None, out, 2)
        return
    for i, msg in enumerate(value):
        path = f"{name}[{i}]"
        if isinstance(msg, dict):
            walk_message(msg, path, i, out, 3, _REGISTRY)
        else:
            walk_free(msg, path, ROLE_UNKNOWN, UNTRUSTED, i, out, 3)


def _system(name: str) -> TopHandler:
    def handler(value: object, out: list[Segment]) -> None:
        walk_known(value, name, ROLE_SYSTEM, TRUSTED, None, out, 2, _REGISTRY)
        if isinstance(value, list) and len(value) > 1:
            join_parts(value, name, ROLE_SYSTEM, None, out)

    return handler


_THREAD_REQUEST = RequestSpec(
    MappingProxyType({"messages": lambda messages, sink: _messages(messages, sink, "messages")}),
    _THREAD_KNOWN,
    free=_FREE,
    registry=_REGISTRY,
)


def _thread(value: object, out: list[Segment], prefix: str = "") -> None:
    """A thread's own fields: ``messages``, ``tool_resources``, ``metadata``."""
    if not isinstance(value, dict):
        walk_free(value, prefix.rstrip("."), ROLE_UNKNOWN, UNTRUSTED, None, out, 2)
        return
    # New segments under the prefix: the walk's own may be shared (see `Segment`).
    out.extend(s.moved(prefix + s.path, s.index) for s in _THREAD_REQUEST.segments(value))


def _nested_thread(value: object, out: list[Segment]) -> None:
    _thread(value, out, "thread.")


_RUN_SPECIAL: Mapping[str, TopHandler] = MappingProxyType(
    {
        "additional_messages": lambda value, out: _messages(value, out, "additional_messages"),
        "instructions": _system("instructions"),
        "additional_instructions": _system("additional_instructions"),
        "thread": _nested_thread,
    }
)
_RUN_REQUEST = RequestSpec(_RUN_SPECIAL, _RUN_KNOWN, opaque=_OPAQUE, free=_FREE, registry=_REGISTRY)


def thread_segments(payload: object) -> list[Segment]:
    """``POST /v1/threads``."""
    if not isinstance(payload, dict):
        return generic_segments(payload)
    out: list[Segment] = []
    _thread(payload, out)
    return out


def run_segments(payload: object) -> list[Segment]:
    """``POST /v1/threads/runs`` and ``/v1/threads/{id}/runs``."""
    if not isinstance(payload, dict):
        return generic_segments(payload)
    return _RUN_REQUEST.segments(payload)


def message_segments(payload: object) -> list[Segment]:
    """``POST /v1/threads/{id}/messages``: one message, its fields at the top."""
    if not isinstance(payload, dict):
        return generic_segments(payload)
    out: list[Segment] = []
    walk_message(payload, "", 0, out, 2, _REGISTRY)
    return out


def _tool_outputs(value: object, out: list[Segment]) -> None:
    if not isinstance(value, list):
        walk_free(value, "tool_outputs", ROLE_TOOL, UNTRUSTED, None, out, 2)
        return
    for i, item in enumerate(value):
        path = f"tool_outputs[{i}]"
        if isinstance(item, dict):
            walk_spec(item, PLAIN, path, ROLE_TOOL, UNTRUSTED, i, out, 3, _REGISTRY)
        else:
            walk_free(item, path, ROLE_TOOL, UNTRUSTED, i, out, 3)


_OUTPUTS_SPECIAL: Mapping[str, TopHandler] = MappingProxyType({"tool_outputs": _tool_outputs})
_OUTPUTS_REQUEST = RequestSpec(_OUTPUTS_SPECIAL, _OUTPUTS_KNOWN, registry=_REGISTRY)


def tool_outputs_segments(payload: object) -> list[Segment]:
    """``POST /v1/threads/{id}/runs/{id}/submit_tool_outputs``."""
    if not isinstance(payload, dict):
        return generic_segments(payload)
    return _OUTPUTS_REQUEST.segments(payload)
