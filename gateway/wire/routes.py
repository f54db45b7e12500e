"""Which adapter reads a request body, by upstream-relative path.

Matching is on the path's tail so that OpenAI-compatible deployments under
other prefixes (``/openai/deployments/x/chat/completions``, ``/api/v1/...``)
get the same adapter. Anything unrecognised gets the generic adapter, which
scans every string, so a wrong guess never skips text; but it reads all of
it as the agent's own, so an endpoint that carries tool results (message
batches, Assistants runs, the cloud platforms' model endpoints) needs its
adapter here, or those results skip the inbound check.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from gateway.wire import (
    anthropic,
    generic,
    hosted,
    openai_assistants,
    openai_chat,
    openai_responses,
)
from gateway.wire.base import Segment

Adapter = Callable[[object], list[Segment]]

# POST /responses, /responses/input_tokens and /responses/compact all take a
# create-style body; /responses/{id}/... are reads and cancels.
_RESPONSES_SUBPATHS: Final = frozenset({"input_tokens", "compact"})


_PARAMS: Final = re.compile(r";[^/]*")
_SLASHES: Final = re.compile(r"//+")


def _route_key(path: str) -> str:
    """The path as the most lenient upstream would route it.

    Servers that match case-insensitively, merge slashes (nginx) or drop
    `;parameters` (servlet containers) serve `/v1//Chat/completions;x` as chat
    completions; a variant read as the generic endpoint would skip the
    inbound check of its tool results.
    """
    path = path.split("?", 1)[0]
    if ";" in path:
        path = _PARAMS.sub("", path)
    if "//" in path:
        path = _SLASHES.sub("/", path)
    return path.rstrip("/").lower()


# Adapters chosen so far, by path as sent: a client's paths are few (the ids in
# some of them make more), so the choice is made once per path. Past the bound
# the choices are forgotten and made again.
_CHOSEN: Final[dict[str, Adapter]] = {}
_CHOSEN_MAX: Final = 4096


def adapter_for(path: str) -> Adapter:
    adapter = _CHOSEN.get(path)
    if adapter is None:
        adapter = _choose(path)
        if len(_CHOSEN) >= _CHOSEN_MAX:
            _CHOSEN.clear()
        _CHOSEN[path] = adapter
    return adapter


def _choose(path: str) -> Adapter:
    key = _route_key(path)
    tail, _, last = key.rpartition("/")
    if last == "completions":
        if tail.endswith("/chat") or tail == "chat":
            return openai_chat.segments
    elif last == "responses":
        return openai_responses.segments
    elif last in _RESPONSES_SUBPATHS:
        if tail.endswith("/responses") or tail == "responses":
            return openai_responses.segments
    elif last == "messages" and (tail.endswith("/v1") or tail in ("", "v1")):
        # Only Anthropic's own /v1/messages: OpenAI's /v1/threads/{id}/messages
        # has another shape (below).
        return anthropic.segments
    elif last == "count_tokens" and _under_messages(tail):
        return anthropic.segments
    elif last == "batches" and _under_messages(tail):
        return anthropic.batch_segments
    elif last == "conversations" or (
        last == "items" and tail.rpartition("/")[0].endswith("conversations")
    ):
        return openai_responses.conversation_segments
    elif last.endswith(_VERTEX_PREDICT):
        return hosted.invoke_segments
    parts = key.split("/")
    return _bedrock(parts) or _assistants(parts) or generic.segments


# Vertex AI: .../publishers/anthropic/models/{model}:rawPredict (and streamed).
_VERTEX_PREDICT: Final = (":rawpredict", ":streamrawpredict")
_BEDROCK: Final = {
    "invoke": hosted.invoke_segments,
    "invoke-with-response-stream": hosted.invoke_segments,
    "converse": hosted.converse_segments,
    "converse-stream": hosted.converse_segments,
}


def _bedrock(parts: list[str]) -> Adapter | None:
    """Bedrock runtime: /model/{id}/invoke, /converse and their streamed forms.

    The id may be an ARN whose slash arrives decoded, so ``model`` is looked for
    anywhere before it.
    """
    adapter = _BEDROCK.get(parts[-1])
    return adapter if adapter is not None and "model" in parts[:-2] else None


def _under_messages(tail: str) -> bool:
    return tail.endswith("/v1/messages") or tail in ("/messages", "messages")


# threads/{id}/runs/{id}/submit_tool_outputs, every other component
_OUTPUTS: Final = ["threads", "runs", "submit_tool_outputs"]


def _assistants(parts: list[str]) -> Adapter | None:
    """The Assistants endpoints that take messages or tool outputs, by their last components."""
    if parts[-1] == "threads":
        return openai_assistants.thread_segments
    if len(parts) >= 2 and parts[-2:] == ["threads", "runs"]:
        return openai_assistants.run_segments
    if len(parts) >= 3 and parts[-3] == "threads":
        if parts[-1] == "messages":
            return openai_assistants.message_segments
        if parts[-1] == "runs":
            return openai_assistants.run_segments
    if len(parts) >= 5 and parts[-1] == "submit_tool_outputs" and parts[-5::2] == _OUTPUTS:
        return openai_assistants.tool_outputs_segments
    return None


def is_streaming_request(payload: object) -> bool:
    return isinstance(payload, dict) and payload.get("stream") is True
