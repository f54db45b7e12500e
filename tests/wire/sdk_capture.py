"""Request bodies exactly as the official SDKs send them, captured in-process (no network)."""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from collections.abc import Callable
from typing import Any, TypeVar

import anthropic
import httpx2
import openai

from gateway.wire import blobs
from gateway.wire.base import Segment, Trust

_C = TypeVar("_C")


# Real attachments, structurally whole: the payload code leaves only a real
# media file of its declared type unscanned, and scans short base64 as sent,
# so fixtures are well-formed files of realistic size (kilobytes).
_NOISE = random.Random(7).randbytes(2048)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png() -> bytes:
    width = height = 24
    rows = b"".join(b"\0" + _NOISE[y * 72 : y * 72 + 72] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows, 0))
        + _chunk(b"IEND", b"")
    )


def _jpeg() -> bytes:
    frame = struct.pack(">BHHB", 8, 16, 16, 1) + bytes((1, 0x11, 0))
    scan = bytes((1, 1, 0, 0, 63, 0))
    # Entropy-coded data holds no 0xFF byte but before a marker.
    data = bytes(b % 255 for b in _NOISE)
    return (
        b"\xff\xd8"
        + b"\xff\xc0" + struct.pack(">H", len(frame) + 2) + frame
        + b"\xff\xda" + struct.pack(">H", len(scan) + 2) + scan
        + data
        + b"\xff\xd9"
    )  # fmt: skip


def _pdf() -> bytes:
    stream = zlib.compress(_NOISE)
    length = str(len(stream)).encode()
    return (
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"
        + b"<< /Length " + length + b" /Filter /FlateDecode >>\n"
        + b"stream\n" + stream + b"\nendstream\nendobj\nstartxref\n0\n%%EOF\n"
    )  # fmt: skip


def _wav() -> bytes:
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(_NOISE)) + _NOISE
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _mp3() -> bytes:
    # MPEG-1 layer III, 128 kbit/s, 44.1 kHz: 417-byte frames.
    frame = b"\xff\xfb\x90\x00" + bytes(413)
    return frame * 6


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


PNG_B64 = _b64(_png())
JPEG_B64 = _b64(_jpeg())
PDF_B64 = _b64(_pdf())
WAV_B64 = _b64(_wav())
MP3_B64 = _b64(_mp3())
PNG_URL = "data:image/png;base64," + PNG_B64
PDF_URL = "data:application/pdf;base64," + PDF_B64
# What the payload code scans of the PDF: the text outside its compressed stream.
PDF_TEXT = "\n".join(blobs.base64_texts(PDF_B64, "application/pdf"))

T = Trust.TRUSTED
U = Trust.UNTRUSTED
OP = Trust.OPAQUE


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
