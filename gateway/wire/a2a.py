"""A2A (Agent2Agent) JSON-RPC messages as the guard reads them. Sans-IO.

A message is ``{role, parts, messageId, ...}``; its parts are text
(``{"kind": "text", "text"}``), data (``{"kind": "data", "data": {...}}``,
read as its JSON text so a secret under a key is seen with its key) and
files (``{"kind": "file", "file": {"bytes" | "uri", "name", "mimeType"}}``,
bytes read when they are text). An answer's result is a Message, a Task
(status message, artifacts, history) or, streamed, a status or artifact
update; every part in it is read. Ids, names and other strings get the
secret floor only (OPAQUE).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from gateway.wire.base import MAX_DEPTH, PayloadError, Segment, Trust

# JSON-RPC 2.0 error codes: the standard ones, and one of the server range
# for a message the gateway refused.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
BLOCKED = -32050
UNAVAILABLE = -32051


def parse_request(body: bytes) -> dict[str, Any]:
    """A JSON-RPC 2.0 request object; PayloadError for anything else (batches included)."""
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadError("the body is not JSON") from exc
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        raise PayloadError("the body is not a JSON-RPC 2.0 request object")
    if not isinstance(value.get("method"), str):
        raise PayloadError("the request has no method")
    return value


def error(rpc_id: object, code: int, message: str, data: object = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    ident = rpc_id if isinstance(rpc_id, str | int) or rpc_id is None else None
    return {"jsonrpc": "2.0", "id": ident, "error": err}


def _file_text(file: dict[str, Any]) -> str | None:
    data = file.get("bytes")
    if not isinstance(data, str):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return data  # not base64: scanned as sent
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _opaque(value: object, path: str, role: str, out: list[Segment], depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise PayloadError("nesting deeper than the gateway reads")
    if isinstance(value, str):
        out.append(Segment(path, role, value, Trust.OPAQUE))
    elif isinstance(value, dict):
        for key, item in value.items():
            out.append(Segment(f"{path}.key", role, str(key), Trust.OPAQUE))
            _opaque(item, f"{path}.{key}", role, out, depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _opaque(item, f"{path}[{i}]", role, out, depth + 1)


def message_segments(message: object, path: str, trust: Trust) -> list[Segment]:
    """Every part of one message: text and data with ``trust``, the rest for the floor."""
    out: list[Segment] = []
    if not isinstance(message, dict):
        return out
    role = message.get("role")
    role = role if isinstance(role, str) else "agent"
    parts = message.get("parts")
    for i, part in enumerate(parts if isinstance(parts, list) else ()):
        where = f"{path}.parts[{i}]"
        if not isinstance(part, dict):
            _opaque(part, where, role, out)
            continue
        kind = part.get("kind", part.get("type"))
        if kind == "text" and isinstance(part.get("text"), str):
            out.append(Segment(f"{where}.text", role, part["text"], trust))
        elif kind == "data":
            text = json.dumps(part.get("data"), ensure_ascii=False)
            out.append(Segment(f"{where}.data", role, text, trust))
        elif kind == "file" and isinstance(part.get("file"), dict):
            content = _file_text(part["file"])
            if content is not None:
                out.append(Segment(f"{where}.file", role, content, trust))
            rest = {k: v for k, v in part["file"].items() if k != "bytes"}
            _opaque(rest, f"{where}.file", role, out)
        else:
            _opaque(part, where, role, out)
        if isinstance(part.get("metadata"), dict):
            _opaque(part["metadata"], f"{where}.metadata", role, out)
    rest = {k: v for k, v in message.items() if k != "parts"}
    _opaque(rest, path, role, out)
    return out


def request_segments(rpc: dict[str, Any], trust: Trust) -> list[Segment]:
    """What a JSON-RPC request carries: its message's parts, and every other string."""
    params = rpc.get("params")
    out: list[Segment] = [Segment("method", "rpc", str(rpc["method"]), Trust.OPAQUE)]
    if not isinstance(params, dict):
        _opaque(params, "params", "rpc", out)
        return out
    out.extend(message_segments(params.get("message"), "params.message", trust))
    rest = {k: v for k, v in params.items() if k != "message"}
    _opaque(rest, "params", "rpc", out)
    return out


def result_segments(result: object, trust: Trust) -> list[Segment]:
    """What a result says to the agent that asked: a Message, a Task or a streamed update."""
    out: list[Segment] = []
    if not isinstance(result, dict):
        _opaque(result, "result", "agent", out)
        return out
    kind = result.get("kind")
    if kind == "message" or "parts" in result:
        return message_segments(result, "result", trust)
    status = result.get("status")
    if isinstance(status, dict):
        out.extend(message_segments(status.get("message"), "result.status.message", trust))
    artifacts = result.get("artifacts")
    if isinstance(result.get("artifact"), dict):
        artifacts = [result["artifact"]]
    for i, artifact in enumerate(artifacts if isinstance(artifacts, list) else ()):
        out.extend(message_segments(artifact, f"result.artifacts[{i}]", trust))
    history = result.get("history")
    for i, message in enumerate(history if isinstance(history, list) else ()):
        out.extend(message_segments(message, f"result.history[{i}]", trust))
    rest = {
        k: v for k, v in result.items() if k not in ("status", "artifacts", "artifact", "history")
    }
    _opaque(rest, "result", "agent", out)
    return out
