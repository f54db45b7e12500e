"""The generic adapter and the walking rules every adapter shares."""

from __future__ import annotations

import base64
import copy
import time

import pytest

from gateway.wire import generic
from gateway.wire.base import MAX_DEPTH, PayloadError
from tests.wire.sdk_capture import PDF_URL, PNG_URL, WAV_B64, nested, openai_body, seg


def test_every_string_with_paths() -> None:
    payload = {
        "model": "text-embedding-3-small",
        "input": ["first", "second", {"type": "x", "id": "y"}],
        "encoding_format": "float",
        "dimensions": 256,
        "flags": [True, None, 1.5],
    }
    assert generic.segments(payload) == [
        seg("model", "unknown", "text-embedding-3-small"),
        seg("input[0]", "unknown", "first"),
        seg("input[1]", "unknown", "second"),
        seg("input[2].type", "unknown", "x"),
        seg("input[2].id", "unknown", "y"),
        seg("encoding_format", "unknown", "float"),
    ]


def test_sdk_embeddings_and_moderations() -> None:
    embeddings = openai_body(
        lambda client: client.embeddings.create(model="e", input=["alpha", "beta"])
    )
    assert [s.text for s in generic.segments(embeddings)] == ["e", "alpha", "beta", "base64"]
    moderation = openai_body(
        lambda client: client.moderations.create(
            model="omni-moderation-latest",
            input=[
                {"type": "text", "text": "is this ok"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
            ],
        )
    )
    # The generic adapter knows no types: everything but the image's data: URL.
    assert [s.text for s in generic.segments(moderation)] == [
        "omni-moderation-latest",
        "text",
        "is this ok",
        "image_url",
    ]


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ("just text", [seg("$", "unknown", "just text")]),
        (["a", ["b"]], [seg("[0]", "unknown", "a"), seg("[1][0]", "unknown", "b")]),
        (42, []),
        (None, []),
        ({}, []),
        ("", []),
    ],
)
def test_any_json_value(payload: object, expected: object) -> None:
    assert generic.segments(payload) == expected


def test_keys_that_could_be_secrets_are_scanned_and_never_in_paths() -> None:
    github = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    payload = {
        "short_name": "a",
        "acknowledged_safety_checks_and_other_words": "b",
        github: "c",
        "has space": "d",
        "dotted.key": {"inner": "e"},
        "ключ": "f",
        "$schema": "g",
        "x-api-key": "h",
        "AKIAIOSFODNN7EXAMPLE": "i",
        "a" * 65: "j",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc": 1,
        "": "empty key",
    }
    assert generic.segments(payload) == [
        seg("short_name", "unknown", "a"),
        seg("acknowledged_safety_checks_and_other_words", "unknown", "b"),
        seg("<key#2>", "unknown", github),
        seg("<value#2>", "unknown", "c"),
        seg("<key#3>", "unknown", "has space"),
        seg("<value#3>", "unknown", "d"),
        seg("<key#4>", "unknown", "dotted.key"),
        seg("<value#4>.inner", "unknown", "e"),
        seg("<key#5>", "unknown", "ключ"),
        seg("<value#5>", "unknown", "f"),
        seg("$schema", "unknown", "g"),
        seg("x-api-key", "unknown", "h"),
        # 20 characters: short enough to be a name (an access key id is not the secret)
        seg("AKIAIOSFODNN7EXAMPLE", "unknown", "i"),
        seg("<key#9>", "unknown", "a" * 65),
        seg("<value#9>", "unknown", "j"),
        seg("<key#10>", "unknown", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
        seg("<value#11>", "unknown", "empty key"),
    ]


@pytest.mark.parametrize(
    ("url", "text"),
    [
        ("data:text/plain;base64," + base64.b64encode(b"token=abc").decode(), "token=abc"),
        ("data:text/plain;charset=utf-8;base64,dG9rZW49YWJj", "token=abc"),
        ("data:text/plain;base64,dG9rZW49YWJj\n", "token=abc"),
        ("data:;base64,dG9rZW49YWJj", "token=abc"),
        ("data:application/json;base64,eyJrIjoidiJ9", '{"k":"v"}'),
        ("data:application/vnd.api+json,%7B%7D", "{}"),
        ("data:,hello%20world", "hello world"),
        ("data:text/csv;base64,YSxi", "a,b"),
        # URL-safe alphabet and missing padding
        ("data:text/plain;base64,fn5-Pw", "~~~?"),
        # not base64 after all: scanned as sent
        ("data:text/plain;base64,not base64!", "data:text/plain;base64,not base64!"),
        ("data:no-comma-here", "data:no-comma-here"),
        ("data:TEXT/PLAIN,UPPER", "UPPER"),
    ],
)
def test_textual_data_urls_are_decoded(url: str, text: str) -> None:
    assert generic.segments({"u": url}) == [seg("u", "unknown", text)]


@pytest.mark.parametrize(
    "url",
    [
        PNG_URL,
        PDF_URL,
        "data:audio/wav;base64," + WAV_B64,
        "data:application/octet-stream," + "%00%01" * 200,
        "data:text/plain;base64,",
    ],
)
def test_binary_data_urls_are_skipped(url: str) -> None:
    assert generic.segments({"u": url}) == []


ENV_FILE = b"OPENAI_API_KEY=sk-proj-abc\nDEBUG=1\n" * 40


@pytest.mark.parametrize(
    "media_type", ["application/octet-stream", "image/png", "application/pdf", ""]
)
def test_the_bytes_decide_not_the_declared_media_type(media_type: str) -> None:
    url = f"data:{media_type};base64," + base64.b64encode(ENV_FILE).decode()
    assert generic.segments({"u": url}) == [seg("u", "unknown", ENV_FILE.decode())]


def test_mime_style_line_breaks_in_base64() -> None:
    encoded = base64.encodebytes(ENV_FILE).decode()
    assert "\n" in encoded
    assert generic.segments({"u": "data:;base64," + encoded}) == [
        seg("u", "unknown", ENV_FILE.decode())
    ]


def test_short_binary_is_scanned_as_sent() -> None:
    # A token where base64 belongs is valid base64 that decodes to garbage.
    token = "ghp_R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    url = "data:text/plain;base64," + token
    assert generic.segments({"u": url}) == [seg("u", "unknown", url)]


def test_large_binary_is_skipped_after_decoding_only_its_head(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoded_sizes: list[int] = []
    real = base64.b64decode

    def spy(data: str, validate: bool = False) -> bytes:
        decoded_sizes.append(len(data))
        return real(data, validate=validate)

    monkeypatch.setattr(base64, "b64decode", spy)
    image = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 20_000).decode()
    assert generic.segments({"u": "data:image/png;base64," + image}) == []
    assert decoded_sizes == [4096]


def test_text_with_binary_after_the_sniffed_head_is_still_text() -> None:
    data = b"header line\n" * 400 + b"\x00\xff tail"
    url = "data:;base64," + base64.b64encode(data).decode()
    [only] = generic.segments({"u": url})
    assert only.text.startswith("header line\n")
    assert only.text.endswith("\x00\ufffd tail")


def test_depth_limit_is_exact() -> None:
    assert generic.segments(nested(MAX_DEPTH, "ok")) == [seg("[0]" * MAX_DEPTH, "unknown", "ok")]
    with pytest.raises(PayloadError):
        generic.segments(nested(MAX_DEPTH + 1, "too deep"))
    deep_dicts: object = "ok"
    for _ in range(MAX_DEPTH):
        deep_dicts = {"k": deep_dicts}
    assert len(generic.segments(deep_dicts)) == 1
    with pytest.raises(PayloadError):
        generic.segments({"k": deep_dicts})


def test_ten_thousand_levels_raise_payload_error_not_recursion_error() -> None:
    with pytest.raises(PayloadError) as info:
        generic.segments(nested(10_000))
    assert "deep" not in str(info.value).replace("deeper", "")


def test_many_unplain_keys_cost_linear_time() -> None:
    # Positions come from the walk, not from searching the object per key.
    payload = {f"key {i}": 1 for i in range(50_000)}
    start = time.process_time()
    segments = generic.segments(payload)
    assert time.process_time() - start < 5  # quadratic took minutes
    assert len(segments) == 50_000
    assert segments[-1] == seg("<key#49999>", "unknown", "key 49999")


def test_paths_stay_short_however_deep_the_keys() -> None:
    payload: object = ["leaf"]
    for _ in range(MAX_DEPTH - 1):
        payload = {"k" * 60: payload}
    [only] = generic.segments(payload)
    assert only.text == "leaf"
    assert len(only.path) < 300
    assert only.path.startswith("k" * 60 + ".k")
    assert only.path.endswith("k" * 60 + "[0]")
    assert "…" in only.path


def test_too_many_segments_is_refused() -> None:
    assert len(generic.segments(["a"] * generic.MAX_SEGMENTS)) == generic.MAX_SEGMENTS
    with pytest.raises(PayloadError, match="more than"):
        generic.segments(["a"] * (generic.MAX_SEGMENTS + 1))


def test_payload_is_not_mutated() -> None:
    payload = {"a": ["x", {"b": "data:text/plain,y"}], "ghp_" + "9" * 36: "z"}
    before = copy.deepcopy(payload)
    generic.segments(payload)
    assert payload == before
