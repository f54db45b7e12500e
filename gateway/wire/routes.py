"""Which adapter reads a request body, by upstream-relative path.

Matching is on the path's tail so that OpenAI-compatible deployments under
other prefixes (``/openai/deployments/x/chat/completions``, ``/api/v1/...``)
get the same adapter. Anything unrecognised gets the generic adapter, which
scans every string, so a wrong guess never skips text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gateway.wire import anthropic, generic, openai_chat, openai_responses
from gateway.wire.base import Segment

Adapter = Callable[[object], list[Segment]]

# POST /responses, /responses/input_tokens and /responses/compact all take a
# create-style body; /responses/{id}/... are reads and cancels.
_RESPONSES_SUBPATHS = frozenset({"input_tokens", "compact"})


_PARAMS = re.compile(r";[^/]*")
_SLASHES = re.compile(r"//+")


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


def adapter_for(path: str) -> Adapter:
    tail, _, last = _route_key(path).rpartition("/")
    if last == "completions":
        if tail.endswith("/chat") or tail == "chat":
            return openai_chat.segments
    elif last == "responses":
        return openai_responses.segments
    elif last in _RESPONSES_SUBPATHS:
        if tail.endswith("/responses") or tail == "responses":
            return openai_responses.segments
    elif last == "messages":
        # Only Anthropic's own /v1/messages: OpenAI's /v1/threads/{id}/messages
        # has another shape.
        if tail.endswith("/v1") or tail in ("", "v1"):
            return anthropic.segments
    elif last == "count_tokens" and (
        tail.endswith("/v1/messages") or tail in ("/messages", "messages")
    ):
        return anthropic.segments
    elif last == "conversations" or (
        last == "items" and tail.rpartition("/")[0].endswith("conversations")
    ):
        return openai_responses.conversation_segments
    return generic.segments


def is_streaming_request(payload: object) -> bool:
    return isinstance(payload, dict) and payload.get("stream") is True
