"""The generic adapter and the walking rules every adapter shares."""

from __future__ import annotations

import base64
import copy
import json
import time

import pytest

from gateway.guard import floor
from gateway.wire import generic
from gateway.wire.base import MAX_DEPTH, PayloadError, Segment, Trust
from tests.wire.sdk_capture import PDF_TEXT, PDF_URL, PNG_URL, WAV_B64, nested, openai_body, seg

OPAQUE = Trust.OPAQUE


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
        # a key outside the vocabulary is scanned, whatever its value
        seg("<key#4>", "unknown", "flags", OPAQUE),
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
                {"type": "image_url", "image_url": {"url": "https://img.example/a.png"}},
            ],
        )
    )
    # The generic adapter knows no types: every string, as text.
    assert [s.text for s in generic.segments(moderation)] == [
        "omni-moderation-latest",
        "text",
        "is this ok",
        "image_url",
        "https://img.example/a.png",
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


def test_every_key_outside_the_vocabulary_is_scanned_and_only_plain_ones_are_in_paths() -> None:
    github = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    aws_key_id = "AKIA" + "IOSFODNN7EXAMPLE"
    payload = {
        "description": "a field name: no segment of its own",
        "short_name": "a",
        "acknowledged_safety_checks_and_other_words": "b",
        github: "c",
        "has space": "d",
        "dotted.key": {"inner": "e"},
        "ключ": "f",
        "$schema": "g",
        "x-api-key": "h",
        aws_key_id: "i",
        "a" * 65: "j",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc": 1,
        "": "empty key",
    }
    assert generic.segments(payload) == [
        seg("description", "unknown", "a field name: no segment of its own"),
        seg("<key#1>", "unknown", "short_name", OPAQUE),
        seg("short_name", "unknown", "a"),
        seg("<key#2>", "unknown", "acknowledged_safety_checks_and_other_words", OPAQUE),
        seg("acknowledged_safety_checks_and_other_words", "unknown", "b"),
        seg("<key#3>", "unknown", github, OPAQUE),
        seg("<value#3>", "unknown", "c"),
        seg("<key#4>", "unknown", "has space", OPAQUE),
        seg("<value#4>", "unknown", "d"),
        seg("<key#5>", "unknown", "dotted.key", OPAQUE),
        seg("<value#5>.<key#0>", "unknown", "inner", OPAQUE),
        seg("<value#5>.inner", "unknown", "e"),
        seg("<key#6>", "unknown", "ключ", OPAQUE),
        seg("<value#6>", "unknown", "f"),
        seg("$schema", "unknown", "g"),
        seg("<key#8>", "unknown", "x-api-key", OPAQUE),
        seg("x-api-key", "unknown", "h"),
        seg("x-api-key(pair)", "unknown", '"x-api-key": "h"', OPAQUE),
        # 20 letters and digits without a separator: scanned, and not a name
        seg("<key#9>", "unknown", aws_key_id, OPAQUE),
        seg("<value#9>", "unknown", "i"),
        seg("<key#10>", "unknown", "a" * 65, OPAQUE),
        seg("<value#10>", "unknown", "j"),
        seg("<key#11>", "unknown", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", OPAQUE),
        seg("<value#12>", "unknown", "empty key"),
    ]


@pytest.mark.parametrize(
    ("key", "plain"),
    [
        ("name", True),
        ("x86_64", True),
        ("sha256sum", True),
        ("line_2", True),
        ("acknowledged_safety_checks", True),
        ("camelCaseFieldName", True),
        ("item_0123456789abc", True),
        ("AKIA" + "IOSFODNN7EXAMPLE", False),
        ("ASIA" + "Z7VQ3M5K2XJ4PL8R", False),
        ("a1b2c3d4e5f6g7h8", False),
        ("3f2a9c1e8b7d6a5f4e3d2c1b", False),
        ("a" * 65, False),
        ("has space", False),
        ("", False),
    ],
)
def test_plain_keys(key: str, plain: bool) -> None:
    assert generic.is_plain_key(key) is plain


def test_the_vocabulary_holds_no_text_the_floor_flags() -> None:
    # A member of these sets is never scanned: a token added by mistake would pass.
    flagged = [word for word in generic.NAMES | generic.WORDS if floor.find(word)]
    assert flagged == []


PASSWORD = "Xq7!" + "Lm2pR9vT#k4"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"


def test_a_secret_named_member_is_also_judged_as_a_pair_at_any_depth() -> None:
    payload = {"db": {"password": PASSWORD, "host": "db.internal"}, "keys": [{"apiKey": "v"}]}
    assert [s for s in generic.segments(payload) if s.path.endswith("(pair)")] == [
        seg("db.password(pair)", "unknown", f'"password": "{PASSWORD}"', OPAQUE),
        seg("keys[0].apiKey(pair)", "unknown", '"apiKey": "v"', OPAQUE),
    ]


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        ({"password": PASSWORD}, "password_assignment"),
        ({"aws_secret_access_key": AWS_SECRET}, "aws_secret_access_key"),
        ({"nested": [{"deep": {"user_password": PASSWORD}}]}, "password_assignment"),
        ({"env": [{"name": "DB_PASSWORD", "value": PASSWORD}]}, "password_assignment"),
        (
            {"tags": [{"Key": "aws_secret_access_key", "Value": AWS_SECRET}]},
            "aws_secret_access_key",
        ),
        # JSON written in a string, with escapes that hide the value from its raw text
        (
            {"arguments": json.dumps({"aws_secret_access_key": AWS_SECRET}).replace("/", "\\/")},
            "aws_secret_access_key",
        ),
        (
            {"text": json.dumps({"config": json.dumps({"password": PASSWORD})})},
            "password_assignment",
        ),
        ({"text": '{"pass\\u0077ord": "' + PASSWORD + '"}'}, "password_assignment"),
    ],
)
def test_the_floor_judges_a_value_with_its_name(payload: object, kind: str) -> None:
    found = {k for s in generic.segments(payload) for k, _ in floor.find(s.text)}
    assert kind in found
    # The value alone is not enough: the name is the context.
    assert floor.find(PASSWORD) == [] and floor.find(AWS_SECRET) == []


def test_json_in_a_string_is_read_only_where_it_could_show_something() -> None:
    plain = json.dumps({"path": "src/app.py", "lines": [1, 2]})
    assert generic.segments({"text": plain}) == [seg("text", "unknown", plain)]
    named = json.dumps({"token": "abc"}, indent=2)
    assert generic.segments({"text": named}) == [
        seg("text", "unknown", named),
        seg("text(pair)", "unknown", '"token": "abc"', OPAQUE),
    ]
    escaped = '{"note": "caf\\u00e9", "n": 1}'
    assert generic.segments({"text": escaped}) == [
        seg("text", "unknown", escaped),
        seg("text(decoded)", "unknown", "note\ncafé\nn", OPAQUE),
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"token": "abc"',  # cut short
        '{"token": "abc"} trailing',
        "[" * 5000 + "]" * 5000,
        "{not json, token}",
        " \n\t",
    ],
)
def test_a_string_that_does_not_parse_stays_plain_text(text: str) -> None:
    assert generic.segments({"text": text}) == [seg("text", "unknown", text)]


def test_json_in_a_string_is_bounded() -> None:
    small = json.dumps({"password": PASSWORD, "pad": "x" * (63 * 1024)})
    assert [s.path for s in generic.segments({"text": small})] == ["text", "text(pair)"]
    big = json.dumps({"password": PASSWORD, "pad": "x" * (64 * 1024)})
    assert generic.segments({"text": big}) == [seg("text", "unknown", big)]
    # Unparsed, the raw text still shows the floor the pair.
    assert floor.find(big)
    deep = '{"token": "v", "d": ' + "[" * 100 + "]" * 100 + "}"
    # Parsed, but nothing deeper than the walk's limit is walked.
    assert [s.path for s in generic.segments({"text": deep})] == ["text", "text(pair)"]


def test_a_duplicate_key_in_json_in_a_string_is_judged_both_times() -> None:
    text = '{"password": "a", "password": "' + PASSWORD + '"}'
    pairs = [s.text for s in generic.segments({"text": text}) if s.path == "text(pair)"]
    assert pairs == ['"password": "a"', f'"password": "{PASSWORD}"']


def test_joined_pieces_keep_only_the_text_around_each_join_when_long() -> None:
    out: list[Segment] = []
    pieces = ["a" * 100_000, "ghp_R8mK2xV7", "qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e" + "b" * 100_000]
    generic.add_joined(out, pieces, "p(joined)", "user", 0)
    [joined] = out
    assert joined.trust is OPAQUE
    whole, start = joined.text.split("\n")
    # Both joins fall in one window: one region, far shorter than the whole.
    assert len(whole) < 3 * 4096 and "ghp_R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e" in whole
    # The middle piece follows an "a": its token is read from its own start too.
    assert start.startswith("ghp_R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e") and len(start) == 4096
    # Joins far apart: one window each; a piece after a space starts no line.
    apart = ["a" * 99_999 + " ", "b" * 100_000, "c" * 100_000]
    generic.add_joined(out, apart, "q(joined)", "user", 0)
    assert out[1].text == "a" * 4095 + " " + "b" * 4096 + "\n" + "b" * 4096 + "c" * 4096


def test_a_token_that_starts_a_piece_is_read_from_its_start() -> None:
    token = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    out: list[Segment] = []
    generic.add_joined(out, ["user7", token[:10], token[10:]], "p(joined)", "user", 0)
    # "user7ghp_..." is no token; the line from the second piece on is.
    assert out[0].text == "user7" + token + "\n" + token
    assert [kind for kind, _ in floor.find(out[0].text)] == ["github_token"]


def test_a_single_piece_is_not_joined() -> None:
    out: list[Segment] = []
    generic.add_joined(out, ["only"], "p(joined)", "user", 0)
    assert out == []


# What a base64 or data: payload turns into is gateway.wire.blobs' to decide;
# what the walk owes it is every such string, passed on at its path.


def _texts(value: str) -> list[str]:
    return [s.text for s in generic.segments({"url": value}) if s.path.startswith("url")]


@pytest.mark.parametrize(
    ("url", "text"),
    [
        ("data:text/plain;base64," + base64.b64encode(b"token=abc").decode(), "token=abc"),
        ("data:text/plain;charset=utf-8;base64,dG9rZW49YWJj", "token=abc"),
        ("data:;base64,dG9rZW49YWJj", "token=abc"),
        ("data:application/json;base64,eyJrIjoidiJ9", '{"k":"v"}'),
        ("data:,hello%20world", "hello world"),
        ("data:text/plain;base64,not base64!", "data:text/plain;base64,not base64!"),
    ],
)
def test_textual_data_urls_are_decoded(url: str, text: str) -> None:
    assert text in _texts(url)


@pytest.mark.parametrize("url", [PNG_URL, "data:audio/wav;base64," + WAV_B64])
def test_media_data_urls_are_skipped(url: str) -> None:
    assert _texts(url) == []


ENV_FILE = b"OPENAI_API_KEY=sk-proj-abc\nDEBUG=1\n" * 40


@pytest.mark.parametrize(
    "media_type", ["application/octet-stream", "image/png", "application/pdf", ""]
)
def test_the_bytes_decide_not_the_declared_media_type(media_type: str) -> None:
    url = f"data:{media_type};base64," + base64.b64encode(ENV_FILE).decode()
    assert ENV_FILE.decode() in _texts(url)


def test_a_pdf_is_scanned_outside_its_compressed_streams() -> None:
    assert _texts(PDF_URL) == [PDF_TEXT]


def test_depth_limit_is_exact() -> None:
    assert generic.segments(nested(MAX_DEPTH, "ok")) == [seg("[0]" * MAX_DEPTH, "unknown", "ok")]
    with pytest.raises(PayloadError):
        generic.segments(nested(MAX_DEPTH + 1, "too deep"))
    deep_dicts: object = "ok"
    for _ in range(MAX_DEPTH):
        deep_dicts = {"content": deep_dicts}
    assert len(generic.segments(deep_dicts)) == 1
    with pytest.raises(PayloadError):
        generic.segments({"content": deep_dicts})


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
    assert segments[-1] == seg("<key#49999>", "unknown", "key 49999", OPAQUE)


def test_paths_stay_short_however_deep_the_keys() -> None:
    payload: object = ["leaf"]
    for _ in range(MAX_DEPTH - 1):
        payload = {"k" * 60: payload}
    [only] = [s for s in generic.segments(payload) if s.text == "leaf"]
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
