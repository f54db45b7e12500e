"""Error bodies in each provider's own shape, so agents' SDKs raise their usual exceptions.

OpenAI: ``{"error": {"message", "type", "param", "code"}}``. The openai SDK picks
the exception class by status and reads ``message``, ``type`` and ``code``
from ``error``. 5xx use ``server_error``, the type OpenAI itself sends.

Anthropic: ``{"type": "error", "error": {"type", "message"}}`` with the types
its API documents per status. The body has no field for our ``code``.

Mid-stream, both SDKs raise on an SSE error event: the openai SDK on any
``data:`` whose JSON has an ``error`` key (chat and responses streams alike),
the anthropic SDK on ``event: error``.
"""

from __future__ import annotations

import json
from typing import Literal

Flavor = Literal["openai", "anthropic"]

_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _openai_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return _OPENAI_TYPES.get(status, "invalid_request_error")


def _anthropic_type(status: int) -> str:
    found = _ANTHROPIC_TYPES.get(status)
    if found is not None:
        return found
    return "api_error" if status >= 500 else "invalid_request_error"


def _dumps(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _openai_error(status: int, message: str, code: str) -> dict[str, object]:
    return {"message": message, "type": _openai_type(status), "param": None, "code": code}


def error_body(flavor: Flavor, status: int, message: str, code: str) -> bytes:
    if flavor == "anthropic":
        return _dumps(
            {"type": "error", "error": {"type": _anthropic_type(status), "message": message}}
        )
    return _dumps({"error": _openai_error(status, message, code)})


def stream_error_event(flavor: Flavor, message: str, code: str) -> bytes:
    """An SSE event that ends a stream the gateway has already started answering with 200.

    There is no status to pick the type from, so it is the one for a failed
    upstream (502).
    """
    if flavor == "anthropic":
        body = _dumps({"type": "error", "error": {"type": "api_error", "message": message}})
        return b"event: error\ndata: " + body + b"\n\n"
    # No event name: named events are skipped by EventSource-style readers that
    # only listen for "message".
    return b"data: " + _dumps({"error": _openai_error(502, message, code)}) + b"\n\n"
