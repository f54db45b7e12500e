"""Requests inside requests: batch input files and fine-tuning files uploaded as JSONL.

An uploaded file whose lines are API requests reaches the model later, when
the batch runs; each line must be read by the adapter of the endpoint it
names, or its tool results would skip the inbound check. Per line:

- a batch request ``{"custom_id", "method", "url", "body"}``: ``body`` is read
  by the adapter for ``url`` (paths ``line[i].body.messages[2].content``);
- a fine-tuning example ``{"messages": [...], "tools": [...]}``: the chat
  adapter; a preference example (``input``, ``preferred_output``,
  ``non_preferred_output``): the chat adapter on each;
- any other JSON value: the generic adapter.

The file's own text is scanned by the caller; what this adds is each line
read as the request it is. A text that is not JSON lines costs one look at
its first character. Lines are split on ``\\n`` only, as JSONL readers do: a
U+2028 inside a JSON string is not a line break to them.
"""

from __future__ import annotations

import re

from gateway.wire import generic, jsontext, openai_chat
from gateway.wire.base import PayloadError, Segment
from gateway.wire.generic import ROLE_REQUEST, add_nested, add_opaque
from gateway.wire.routes import adapter_for

# OpenAI takes at most 50,000 requests in one batch input file.
MAX_LINES = 50_000

_BATCH_KEYS = frozenset({"custom_id", "method", "url", "body"})
_PREFERENCE_OUTPUTS = ("preferred_output", "non_preferred_output")
_JSON_LINES = re.compile(r"\s*\{")


def file_segments(text: str, path: str, index: int | None) -> list[Segment]:
    """Segments for the requests in an uploaded text file; [] when it holds none.

    ``path`` locates the file in the request (a form field), ``index`` is its
    position there. Raises PayloadError for a file that holds requests but
    cannot be read in full within the bounds.
    """
    if _JSON_LINES.match(text) is None:
        return []
    out: list[Segment] = []
    prefix = f"{path}." if path else ""
    for n, line in enumerate(text.split("\n")):
        if n >= MAX_LINES:
            raise PayloadError(f"uploaded file has more than {MAX_LINES} lines of requests")
        if not line or line.isspace():
            continue
        try:
            value = jsontext.loads(line)
        except jsontext.DuplicateKey as exc:
            # Read differently by different parsers, as in a request body: the
            # text the batch runner reads might not be the text scanned here.
            raise PayloadError(f"line {n + 1} of the uploaded file has a duplicate key") from exc
        except jsontext.JSONTextError:
            # Not JSON: the file's own segment holds its text.
            continue
        try:
            inner = _line_segments(value)
        except PayloadError as exc:
            raise PayloadError(f"line {n + 1} of the uploaded file: {exc}") from exc
        add_nested(out, inner, f"{prefix}line[{n}].", index)
    return out


def _line_segments(value: object) -> list[Segment]:
    if not isinstance(value, dict):
        return generic.segments(value)
    if value.keys() >= _BATCH_KEYS:
        return _batch_request(value)
    if isinstance(value.get("messages"), list):
        return openai_chat.segments(value)
    if isinstance(value.get("input"), dict) and any(key in value for key in _PREFERENCE_OUTPUTS):
        return _preference(value)
    return generic.segments(value)


def _batch_request(line: dict[str, object]) -> list[Segment]:
    out: list[Segment] = []
    url = line["url"]
    for key, value in line.items():
        if key == "body":
            adapter = adapter_for(url) if isinstance(url, str) else generic.segments
            add_nested(out, adapter(value), "body.")
        elif key in _BATCH_KEYS and isinstance(value, str):
            add_opaque(out, value, key, ROLE_REQUEST, None)
        else:
            add_nested(out, generic.segments({key: value}), "")
    return out


def _preference(line: dict[str, object]) -> list[Segment]:
    out: list[Segment] = []
    for key, value in line.items():
        if key == "input" and isinstance(value, dict) and isinstance(value.get("messages"), list):
            add_nested(out, openai_chat.segments(value), "input.")
        elif key in _PREFERENCE_OUTPUTS and isinstance(value, list):
            # Assistant messages, read as a conversation's.
            inner = openai_chat.segments({"messages": value})
            add_nested(out, inner, key, strip="messages")
        else:
            add_nested(out, generic.segments({key: value}), "")
    return out
