"""Error bodies and stream error events, read back by the official SDKs."""

from __future__ import annotations

import json

import anthropic
import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletionChunk

from gateway.wire.errors import Flavor, error_body, stream_error_event

MESSAGE = 'Blocked: a secret ("openai_api_key") in message 2 — see the audit log'
CHUNK = {
    "id": "c",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "delta": {"content": "hel"}, "finish_reason": None}],
}


def _response(status: int, body: bytes, url: str) -> httpx2.Response:
    return httpx2.Response(status, content=body, request=httpx2.Request("POST", url))


def _openai() -> openai.OpenAI:
    return openai.OpenAI(api_key="test", base_url="http://gw.test/v1", max_retries=0)


def _anthropic() -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url="http://gw.test", max_retries=0)


@pytest.mark.parametrize(
    ("status", "error_type", "exception"),
    [
        (400, "invalid_request_error", openai.BadRequestError),
        (401, "authentication_error", openai.AuthenticationError),
        (403, "permission_error", openai.PermissionDeniedError),
        (404, "not_found_error", openai.NotFoundError),
        (413, "request_too_large", openai.APIStatusError),
        (415, "invalid_request_error", openai.APIStatusError),
        (429, "rate_limit_error", openai.RateLimitError),
        (502, "server_error", openai.InternalServerError),
        (504, "server_error", openai.InternalServerError),
    ],
)
def test_openai_error_body(
    status: int, error_type: str, exception: type[openai.APIStatusError]
) -> None:
    body = error_body("openai", status, MESSAGE, "secret_detected")
    assert json.loads(body) == {
        "error": {
            "message": MESSAGE,
            "type": error_type,
            "param": None,
            "code": "secret_detected",
        }
    }
    response = _response(status, body, "http://gw.test/v1/chat/completions")
    error = _openai()._make_status_error_from_response(response)
    assert type(error) is exception
    assert error.message == f"Error code: {status} - {MESSAGE}"
    assert error.code == "secret_detected"
    assert error.type == error_type
    assert error.param is None


@pytest.mark.parametrize(
    ("status", "error_type", "exception"),
    [
        (400, "invalid_request_error", anthropic.BadRequestError),
        (401, "authentication_error", anthropic.AuthenticationError),
        (403, "permission_error", anthropic.PermissionDeniedError),
        (404, "not_found_error", anthropic.NotFoundError),
        (413, "request_too_large", anthropic.ContentTooLargeError),
        (415, "invalid_request_error", anthropic.APIStatusError),
        (429, "rate_limit_error", anthropic.RateLimitError),
        (500, "api_error", anthropic.InternalServerError),
        (502, "api_error", anthropic.InternalServerError),
        (504, "timeout_error", anthropic.GatewayTimeoutError),
        (529, "overloaded_error", anthropic.OverloadedError),
    ],
)
def test_anthropic_error_body(
    status: int, error_type: str, exception: type[anthropic.APIStatusError]
) -> None:
    body = error_body("anthropic", status, MESSAGE, "secret_detected")
    assert json.loads(body) == {"type": "error", "error": {"type": error_type, "message": MESSAGE}}
    response = _response(status, body, "http://gw.test/v1/messages")
    error = _anthropic()._make_status_error_from_response(response)
    assert type(error) is exception
    assert error.status_code == status
    assert error.type == error_type
    assert error.api_message == MESSAGE


def test_error_bodies_are_compact_utf8() -> None:
    body = error_body("openai", 400, "naïve — ok", "c")
    assert body.decode("utf-8") == (
        '{"error":{"message":"naïve — ok","type":"invalid_request_error","param":null,"code":"c"}}'
    )


def test_openai_stream_raises_on_the_error_event() -> None:
    content = (
        b"data: "
        + json.dumps(CHUNK).encode()
        + b"\n\n"
        + stream_error_event("openai", MESSAGE, "secret_in_response")
    )
    stream = openai.Stream(
        cast_to=ChatCompletionChunk,
        response=_response(200, content, "http://gw.test/v1/chat/completions"),
        client=_openai(),
    )
    first = next(iter(stream))
    assert first.choices[0].delta.content == "hel"
    with pytest.raises(openai.APIError) as info:
        next(iter(stream))
    assert info.value.message == MESSAGE
    assert info.value.code == "secret_in_response"


def test_openai_stream_error_event_shape() -> None:
    event = stream_error_event("openai", MESSAGE, "secret_in_response")
    assert event.startswith(b"data: ")
    assert event.endswith(b"\n\n")
    assert json.loads(event[len(b"data: ") : -2]) == {
        "error": {
            "message": MESSAGE,
            "type": "server_error",
            "param": None,
            "code": "secret_in_response",
        }
    }


def test_anthropic_stream_raises_on_the_error_event() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "m",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 0},
        },
    }
    content = (
        b"event: message_start\ndata: "
        + json.dumps(start).encode()
        + b"\n\n"
        + stream_error_event("anthropic", MESSAGE, "secret_in_response")
    )
    stream: anthropic.Stream[anthropic.types.RawMessageStreamEvent] = anthropic.Stream(
        cast_to=anthropic.types.RawMessageStreamEvent,  # type: ignore[arg-type]
        response=_response(200, content, "http://gw.test/v1/messages"),
        client=_anthropic(),
    )
    iterator = iter(stream)
    assert next(iterator).type == "message_start"
    with pytest.raises(anthropic.APIStatusError) as info:
        next(iterator)
    assert info.value.type == "api_error"
    assert info.value.api_message == MESSAGE


def test_anthropic_stream_error_event_shape() -> None:
    event = stream_error_event("anthropic", MESSAGE, "c")
    head, data = event.split(b"\n", 1)
    assert head == b"event: error"
    assert data.startswith(b"data: ")
    assert data.endswith(b"\n\n")
    assert json.loads(data[len(b"data: ") : -2]) == {
        "type": "error",
        "error": {"type": "api_error", "message": MESSAGE},
    }


@pytest.mark.parametrize("flavor", ["openai", "anthropic"])
def test_messages_with_line_breaks_stay_one_event(flavor: Flavor) -> None:
    event = stream_error_event(flavor, "line one\nline two\r\n", "c")
    assert event.count(b"\n\n") == 1
    assert event.endswith(b"\n\n")
