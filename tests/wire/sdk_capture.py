"""Request bodies exactly as the official SDKs send them, captured in-process (no network)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, TypeVar

import anthropic
import httpx2
import openai

from gateway.wire.base import Segment, Trust

_C = TypeVar("_C")


def _binary(header: bytes) -> str:
    # Real attachments are kilobytes; the adapters scan binary under 512
    # base64 characters as sent, so fixtures must be of realistic size.
    return base64.b64encode(header + bytes(range(256)) * 3).decode()


PNG_B64 = _binary(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
JPEG_B64 = _binary(b"\xff\xd8\xff\xe0\x00\x10JFIF")
# A PDF's second line is a comment of high bytes that marks the file as binary.
PDF_B64 = _binary(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
WAV_B64 = _binary(b"RIFF$\x00\x00\x00WAVEfmt ")
MP3_B64 = _binary(b"ID3\x04\x00\x00\x00\x00\x00#TSSE")
PNG_URL = "data:image/png;base64," + PNG_B64
PDF_URL = "data:application/pdf;base64," + PDF_B64

T = Trust.TRUSTED
U = Trust.UNTRUSTED


def _capturing_client() -> tuple[httpx2.Client, list[object]]:
    bodies: list[object] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        # The SDKs build response models without validation; an empty object will do.
        return httpx2.Response(200, json={})

    return httpx2.Client(transport=httpx2.MockTransport(handler)), bodies


def _call(call: Callable[[_C], object], client: _C, bodies: list[object]) -> None:
    try:
        call(client)
    except Exception:
        # Some methods reject the empty response; the request was still captured.
        if not bodies:
            raise


# The client is typed Any: the payloads go beyond the SDKs' static TypedDicts on
# purpose (unknown and future fields); the SDKs still serialise them at runtime.
def openai_body(call: Callable[[Any], object]) -> dict[str, object]:
    http, bodies = _capturing_client()
    client = openai.OpenAI(
        api_key="test", base_url="http://upstream.test/v1", max_retries=0, http_client=http
    )
    _call(call, client, bodies)
    [body] = bodies
    assert isinstance(body, dict)
    return body


def anthropic_body(call: Callable[[Any], object]) -> dict[str, object]:
    http, bodies = _capturing_client()
    client = anthropic.Anthropic(
        api_key="test", base_url="http://upstream.test", max_retries=0, http_client=http
    )
    _call(call, client, bodies)
    [body] = bodies
    assert isinstance(body, dict)
    return body


def seg(path: str, role: str, text: str, trust: Trust = T, index: int | None = None) -> Segment:
    return Segment(path, role, text, trust, index)


def msg(index: int, rest: str, role: str, text: str, trust: Trust = T) -> Segment:
    """A segment in ``messages[index]``."""
    return Segment(f"messages[{index}].{rest}", role, text, trust, index)


def item(index: int, rest: str, role: str, text: str, trust: Trust = T) -> Segment:
    """A segment in Responses ``input[index]``."""
    return Segment(f"input[{index}].{rest}", role, text, trust, index)


def nested(depth: int, leaf: object = "deep") -> object:
    """``depth`` lists around ``leaf``, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value
