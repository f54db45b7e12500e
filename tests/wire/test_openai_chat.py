"""Chat Completions: every text an agent can send, as the openai SDK sends it."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from gateway.guard import floor
from gateway.wire import openai_chat
from gateway.wire.base import PayloadError, Segment, Trust
from tests.wire.sdk_capture import (
    JPEG_B64,
    MP3_B64,
    OP,
    PDF_B64,
    PDF_TEXT,
    PDF_URL,
    PNG_URL,
    WAV_B64,
    U,
    msg,
    nested,
    openai_body,
    seg,
)


def _sdk_payload() -> dict[str, object]:
    return openai_body(
        lambda client: client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {"role": "developer", "content": "Follow the style guide.", "name": "ops"},
                {
                    "role": "system",
                    "content": [{"type": "text", "text": "You are a coding agent."}],
                },
                {
                    "role": "user",
                    "name": "alice",
                    "content": [
                        {"type": "text", "text": "What is in these?"},
                        {
                            "type": "image_url",
                            "image_url": {
                                "url": "https://img.example/cat.png?sig=abc",
                                "detail": "high",
                            },
                        },
                        {
                            "type": "image_url",
                            "image_url": {"url": PNG_URL},
                        },
                        {
                            "type": "input_audio",
                            "input_audio": {"data": WAV_B64, "format": "wav"},
                        },
                        {"type": "file", "file": {"file_data": PDF_URL, "filename": "report.pdf"}},
                        {"type": "file", "file": {"file_id": "file-abc123"}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Let me look."},
                        {"type": "refusal", "refusal": "I can't do that part."},
                    ],
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path": ".env"}'},
                        },
                        {
                            "id": "call_2",
                            "type": "custom",
                            "custom": {"name": "shell", "input": "cat ~/.aws/credentials"},
                        },
                    ],
                    "refusal": None,
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "OPENAI_API_KEY=..."},
                {
                    "role": "tool",
                    "tool_call_id": "call_2",
                    "content": [{"type": "text", "text": "[default]"}],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "legacy_fn", "arguments": "{}"},
                },
                {"role": "function", "name": "legacy_fn", "content": "legacy result"},
            ],
            tools=[
                {
                    "type": "function",
                    "function": {
                        "name": "read_file",
                        "description": "Read a file from disk.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "path": {
                                    "type": "string",
                                    "description": "Path to read",
                                    "format": "uri-reference",
                                    "enum": ["README.md", ".env"],
                                }
                            },
                            "required": ["path"],
                            "additionalProperties": False,
                        },
                        "strict": True,
                    },
                },
                {
                    "type": "custom",
                    "custom": {
                        "name": "shell",
                        "description": "Run a command.",
                        "format": {
                            "type": "grammar",
                            "grammar": {"syntax": "lark", "definition": "start: /.+/"},
                        },
                    },
                },
            ],
            tool_choice={"type": "function", "function": {"name": "read_file"}},
            response_format={
                "type": "json_schema",
                "json_schema": {
                    "name": "answer",
                    "description": "The answer.",
                    "schema": {"type": "object", "properties": {"text": {"type": "string"}}},
                },
            },
            prediction={"type": "content", "content": "predicted file"},
            metadata={"ticket": "T-1"},
            user="user-42",
            stop=["END"],
            modalities=["text"],
            reasoning_effort="low",
            service_tier="auto",
            stream=True,
            stream_options={"include_usage": True},
            web_search_options={
                "user_location": {"type": "approximate", "approximate": {"city": "Paris"}}
            },
            prompt_cache_key="cache-key-1",
            safety_identifier="hashed-user",
        )
    )


def test_sdk_request_every_position() -> None:
    assert openai_chat.segments(_sdk_payload()) == [
        seg("model", "request", "gpt-4o", OP),
        msg(0, "content", "developer", "Follow the style guide."),
        msg(0, "name", "developer", "ops"),
        msg(1, "content[0].text", "system", "You are a coding agent."),
        msg(2, "name", "user", "alice"),
        msg(2, "content[0].text", "user", "What is in these?"),
        msg(2, "content[1].image_url.url", "user", "https://img.example/cat.png?sig=abc"),
        # content[2] image data: URL and content[3] audio are media; a PDF is
        # read outside its compressed streams
        msg(2, "content[4].file.file_data", "user", PDF_TEXT, U),
        msg(2, "content[4].file.filename", "user", "report.pdf"),
        msg(2, "content[5].file.file_id", "user", "file-abc123", OP),
        msg(3, "content[0].text", "assistant", "Let me look."),
        msg(3, "content[1].refusal", "assistant", "I can't do that part."),
        msg(3, "tool_calls[0].id", "assistant", "call_1", OP),
        msg(3, "tool_calls[0].function.name", "assistant", "read_file"),
        msg(3, "tool_calls[0].function.arguments", "assistant", '{"path": ".env"}'),
        msg(3, "tool_calls[1].id", "assistant", "call_2", OP),
        msg(3, "tool_calls[1].custom.name", "assistant", "shell"),
        msg(3, "tool_calls[1].custom.input", "assistant", "cat ~/.aws/credentials"),
        msg(4, "tool_call_id", "tool", "call_1", OP),
        msg(4, "content", "tool", "OPENAI_API_KEY=...", U),
        msg(5, "tool_call_id", "tool", "call_2", OP),
        msg(5, "content[0].text", "tool", "[default]", U),
        msg(6, "function_call.name", "assistant", "legacy_fn"),
        msg(6, "function_call.arguments", "assistant", "{}"),
        msg(7, "name", "function", "legacy_fn", U),
        msg(7, "content", "function", "legacy result", U),
        # metadata keys are the client's own: scanned
        seg("metadata.<key#0>", "request", "ticket", OP),
        seg("metadata.ticket", "request", "T-1"),
        seg("prediction.content", "request", "predicted file"),
        seg("prompt_cache_key", "request", "cache-key-1"),
        # a field whose name could name a secret is also judged with it
        seg("prompt_cache_key(pair)", "request", '"prompt_cache_key": "cache-key-1"', OP),
        seg("response_format.json_schema.name", "request", "answer"),
        seg("response_format.json_schema.description", "request", "The answer."),
        seg("safety_identifier", "request", "hashed-user"),
        seg("stop[0]", "request", "END"),
        seg("tool_choice.function.name", "request", "read_file"),
        seg("tools[0].function.name", "request", "read_file"),
        seg("tools[0].function.description", "request", "Read a file from disk."),
        seg("tools[0].function.parameters.properties.path.description", "request", "Path to read"),
        seg("tools[0].function.parameters.properties.path.enum[0]", "request", "README.md"),
        seg("tools[0].function.parameters.properties.path.enum[1]", "request", ".env"),
        seg("tools[1].custom.name", "request", "shell"),
        seg("tools[1].custom.description", "request", "Run a command."),
        seg("tools[1].custom.format.grammar.definition", "request", "start: /.+/"),
        seg("user", "request", "user-42"),
        seg("web_search_options.user_location.approximate.city", "request", "Paris"),
    ]


def _one(message: object) -> list[Segment]:
    return openai_chat.segments({"messages": [message]})


@pytest.mark.parametrize(
    ("role", "trust"),
    [
        ("system", "trusted"),
        ("developer", "trusted"),
        ("user", "trusted"),
        ("assistant", "trusted"),
        ("tool", "untrusted"),
        ("function", "untrusted"),
    ],
)
def test_every_known_role_string_content(role: str, trust: str) -> None:
    assert _one({"role": role, "content": "hello"}) == [
        msg(0, "content", role, "hello", Trust(trust))
    ]


@pytest.mark.parametrize(
    "role",
    ["ipython", "critic", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "AKIA" + "Z7VQ3M5K2XJ4PL8R"],
)
def test_an_unknown_role_is_text_and_never_a_label(role: str) -> None:
    # Labels reach errors and the audit; the role itself reaches the chat template.
    assert _one({"role": role, "content": "x"}) == [
        msg(0, "role", "unknown", role, U),
        msg(0, "content", "unknown", "x", U),
    ]


def test_fast_path_matches_the_general_walk() -> None:
    plain = _one({"role": "user", "content": "hi"})
    general = _one({"role": "user", "content": "hi", "refusal": None})
    assert plain == general == [msg(0, "content", "user", "hi")]


def test_missing_role_and_non_object_messages() -> None:
    payload = {"messages": [{"content": "no role"}, "bare string", ["a", {"b": "c"}], 7, None]}
    assert openai_chat.segments(payload) == [
        msg(0, "content", "unknown", "no role", U),
        seg("messages[1]", "unknown", "bare string", U, 1),
        seg("messages[2][0]", "unknown", "a", U, 2),
        seg("messages[2][1].<key#0>", "unknown", "b", U, 2),
        seg("messages[2][1].b", "unknown", "c", U, 2),
    ]


def test_unknown_part_types_are_scanned_in_full_as_untrusted() -> None:
    part = {"type": "video_url", "video_url": {"url": "https://v.example/x.mp4", "id": "v1"}}
    assert _one({"role": "user", "content": [part, "loose string", ["nested"]]}) == [
        # the unknown type is scanned, its key too: the model may read them
        msg(0, "content[0].type", "user", "video_url", U),
        msg(0, "content[0].<key#1>", "user", "video_url", U),
        msg(0, "content[0].video_url.url", "user", "https://v.example/x.mp4", U),
        msg(0, "content[0].video_url.id", "user", "v1", U),
        msg(0, "content[1]", "user", "loose string"),
        msg(0, "content[2][0]", "user", "nested", U),
    ]


def test_part_without_type_is_unknown() -> None:
    assert _one({"role": "user", "content": [{"text": "untyped"}]}) == [
        msg(0, "content[0].text", "user", "untyped", U)
    ]


def test_unknown_message_keys_are_scanned() -> None:
    message = {
        "role": "assistant",
        "content": "answer",
        "reasoning_content": "thinking about it",
        "thinking": {"steps": ["one", "two"]},
    }
    assert _one(message) == [
        msg(0, "content", "assistant", "answer"),
        msg(0, "reasoning_content", "assistant", "thinking about it"),
        msg(0, "thinking.<key#0>", "assistant", "steps", OP),
        msg(0, "thinking.steps[0]", "assistant", "one"),
        msg(0, "thinking.steps[1]", "assistant", "two"),
    ]


def test_textual_file_data_is_decoded_and_untrusted() -> None:
    file_data = "data:text/plain;base64,T1BFTkFJX0FQSV9LRVk9c2stLi4u"
    part = {"type": "file", "file": {"file_data": file_data, "filename": ".env"}}
    got = _one({"role": "user", "content": [part]})
    assert ("OPENAI_API_KEY=sk-...", U) in [(s.text, s.trust) for s in got]
    assert got[-1] == msg(0, "content[0].file.filename", "user", ".env")


def test_binary_data_is_skipped() -> None:
    parts = [
        {"type": "file", "file": {"file_data": PDF_B64, "filename": "a.pdf"}},
        {
            "type": "input_audio",
            "input_audio": {"data": MP3_B64, "format": "mp3"},
        },
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + JPEG_B64}},
    ]
    assert _one({"role": "user", "content": parts}) == [
        msg(0, "content[0].file.file_data", "user", PDF_TEXT, U),
        msg(0, "content[0].file.filename", "user", "a.pdf"),
    ]


def test_text_where_base64_belongs_is_scanned() -> None:
    env = "OPENAI_API_KEY=sk-proj-abc\n" * 30
    parts = [
        {"type": "file", "file": {"file_data": base64.b64encode(env.encode()).decode()}},
        {"type": "file", "file": {"file_data": "not base64: a plain note"}},
        {
            "type": "input_audio",
            "input_audio": {"data": "ghp_R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"},
        },
    ]
    assert _one({"role": "user", "content": parts}) == [
        msg(0, "content[0].file.file_data", "user", env, U),
        msg(0, "content[1].file.file_data", "user", "not base64: a plain note", U),
        msg(0, "content[2].input_audio.data", "user", "ghp_R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"),
    ]


def test_opaque_field_with_unexpected_shape_is_still_walked() -> None:
    part = {"type": "input_audio", "input_audio": {"data": {"hidden": "text"}, "format": "wav"}}
    assert _one({"role": "user", "content": [part]}) == [
        msg(0, "content[0].input_audio.data.<key#0>", "user", "hidden", OP),
        msg(0, "content[0].input_audio.data.hidden", "user", "text"),
    ]


def test_unknown_top_level_keys_are_scanned_as_untrusted() -> None:
    long_key = "x-vendor-extension-2024-06-01-option"
    payload = {
        "messages": [],
        "documents": [{"title": "Doc", "text": "retrieved passage"}],
        "chat_template_kwargs": {"enable_thinking": True},
        long_key: "value",
        "n": 2,
    }
    assert openai_chat.segments(payload) == [
        seg("<key#1>", "unknown", "documents", U),
        seg("documents[0].title", "unknown", "Doc", U),
        seg("documents[0].text", "unknown", "retrieved passage", U),
        seg("<key#2>", "unknown", "chat_template_kwargs", U),
        seg("chat_template_kwargs.<key#0>", "unknown", "enable_thinking", U),
        seg("<key#3>", "unknown", long_key, U),
        seg("<value#3>", "unknown", "value", U),
    ]


def test_free_form_keys_are_scanned() -> None:
    token = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    aws_key_id = "AKIA" + "Z7VQ3M5K2XJ4PL8R"
    payload = {
        "messages": [],
        "metadata": {"owner": "ops", token: "1", "a key": True, aws_key_id: "x", "name": "n"},
    }
    assert openai_chat.segments(payload) == [
        seg("metadata.<key#0>", "request", "owner", OP),
        seg("metadata.owner", "request", "ops"),
        seg("metadata.<key#1>", "request", token, OP),
        seg("metadata.<value#1>", "request", "1"),
        seg("metadata.<key#2>", "request", "a key", OP),
        seg("metadata.<key#3>", "request", aws_key_id, OP),
        seg("metadata.<value#3>", "request", "x"),
        # a field name of the API: no segment of its own
        seg("metadata.name", "request", "n"),
    ]


def test_known_enum_values_are_not_segments() -> None:
    payload = {
        "model": "gpt-4o",
        "messages": [],
        "modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": "wav"},
        "service_tier": "flex",
        "reasoning_effort": "high",
        "verbosity": "low",
        "prompt_cache_retention": "24h",
        "tool_choice": "auto",
        "function_call": "none",
    }
    # A custom voice name is free text; the rest are known enum values. The
    # model is not: any string may be sent there.
    assert openai_chat.segments(payload) == [
        seg("model", "request", "gpt-4o", OP),
        seg("audio.voice", "request", "alloy"),
    ]


TOKEN = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"


@pytest.mark.parametrize(
    ("key", "value", "path"),
    [
        ("model", TOKEN, "model"),
        ("service_tier", TOKEN, "service_tier"),
        ("reasoning_effort", TOKEN, "reasoning_effort"),
        ("verbosity", TOKEN, "verbosity"),
        ("prompt_cache_retention", TOKEN, "prompt_cache_retention"),
        ("tool_choice", TOKEN, "tool_choice"),
        ("function_call", TOKEN, "function_call"),
        ("modalities", ["text", TOKEN], "modalities[1]"),
        ("response_format", {"type": TOKEN}, "response_format.type"),
        ("audio", {"voice": "alloy", "format": TOKEN}, "audio.format"),
        ("tool_choice", {"type": TOKEN, "function": {"name": "f"}}, "tool_choice.type"),
        (
            "tools",
            [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "parameters": {"type": "object", "required": [TOKEN]},
                    },
                }
            ],
            "tools[0].function.parameters.required[0]",
        ),
    ],
)
def test_any_other_value_of_an_enum_or_id_is_an_opaque_segment(
    key: str, value: object, path: str
) -> None:
    got = openai_chat.segments({"messages": [], key: value})
    assert seg(path, "request", TOKEN, OP) in got


@pytest.mark.parametrize(
    ("part", "path"),
    [
        (
            {"type": "image_url", "image_url": {"url": "https://x.example/a.png", "detail": TOKEN}},
            "content[0].image_url.detail",
        ),
        ({"type": "file", "file": {"file_id": TOKEN}}, "content[0].file.file_id"),
        (
            {"type": "input_audio", "input_audio": {"data": "ZGF0YQ==", "format": TOKEN}},
            "content[0].input_audio.format",
        ),
        (
            {"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": TOKEN}},
            "content[0].cache_control.ttl",
        ),
    ],
)
def test_ids_and_enums_in_parts_are_opaque_segments(part: dict[str, object], path: str) -> None:
    assert msg(0, path, "user", TOKEN, OP) in _one({"role": "user", "content": [part]})


def test_ids_of_tool_calls_and_results_are_opaque_segments() -> None:
    call = {"id": TOKEN, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert openai_chat.segments(
        {
            "messages": [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": TOKEN, "content": "ok"},
            ]
        }
    ) == [
        msg(0, "tool_calls[0].id", "assistant", TOKEN, OP),
        msg(0, "tool_calls[0].function.name", "assistant", "f"),
        msg(0, "tool_calls[0].function.arguments", "assistant", "{}"),
        msg(1, "tool_call_id", "tool", TOKEN, OP),
        msg(1, "content", "tool", "ok", U),
    ]


PASSWORD = "Xq7!" + "Lm2pR9vT#k4"


def test_tool_call_arguments_are_read_as_json() -> None:
    arguments = json.dumps(
        {"user": "ops", "password": PASSWORD, "env": [{"name": "API_TOKEN", "value": "v"}]}
    )
    call = {"id": "c1", "type": "function", "function": {"name": "login", "arguments": arguments}}
    at = "tool_calls[0].function.arguments"
    assert _one({"role": "assistant", "tool_calls": [call]}) == [
        msg(0, "tool_calls[0].id", "assistant", "c1", OP),
        msg(0, "tool_calls[0].function.name", "assistant", "login"),
        msg(0, at, "assistant", arguments),
        msg(0, at + "(pair)", "assistant", f'"password": "{PASSWORD}"', OP),
        msg(0, at + "(pair)", "assistant", '"API_TOKEN": "v"', OP),
        # the string leaves joined: a token split across two arguments is whole here
        # (and again from the start of each leaf that follows a letter or digit)
        msg(
            0,
            at + "(joined)",
            "assistant",
            f"ops{PASSWORD}API_TOKENv\n{PASSWORD}API_TOKENv\nAPI_TOKENv",
            OP,
        ),
    ]


def test_a_token_split_across_arguments_is_found() -> None:
    arguments = json.dumps({"head": TOKEN[:12], "tail": [TOKEN[12:]]})
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    got = _one({"role": "assistant", "content": None, "tool_calls": [call]})
    [joined] = [s for s in got if s.path.endswith("(joined)")]
    assert joined.text == TOKEN
    assert floor.find(joined.text)
    assert not any(floor.find(s.text) for s in got if s is not joined)


def test_arguments_that_are_not_json_stay_text() -> None:
    for arguments in ['{"a": "b", "c": "d"', "plain words", ""]:
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
        got = _one({"role": "assistant", "content": None, "tool_calls": [call]})
        assert [s.path for s in got if "arguments" in s.path] == (
            ["messages[0].tool_calls[0].function.arguments"] if arguments else []
        )


def test_legacy_function_call_arguments_are_read_as_json() -> None:
    arguments = json.dumps({"a": TOKEN[:10], "b": TOKEN[10:]})
    got = _one({"role": "assistant", "function_call": {"name": "f", "arguments": arguments}})
    assert msg(0, "function_call.arguments(joined)", "assistant", TOKEN, OP) in got


def test_a_token_split_across_text_parts_is_found() -> None:
    parts = [
        {"type": "text", "text": "my token is " + TOKEN[:9]},
        {"type": "image_url", "image_url": {"url": "https://x.example/a.png"}},
        {"type": "text", "text": TOKEN[9:]},
    ]
    got = _one({"role": "user", "content": parts})
    assert got[-1] == msg(0, "content(joined)", "user", "my token is " + TOKEN, OP)
    assert floor.find(got[-1].text)
    tool_parts = [{"type": "text", "text": TOKEN[:20]}, {"type": "text", "text": TOKEN[20:]}]
    got = _one({"role": "tool", "tool_call_id": "c", "content": tool_parts})
    assert got[-1] == msg(0, "content(joined)", "tool", TOKEN, OP)


def test_one_text_part_is_not_joined() -> None:
    parts = [{"type": "text", "text": "one"}, {"type": "image_url", "image_url": {"url": "u"}}]
    assert not any(s.path.endswith("(joined)") for s in _one({"role": "user", "content": parts}))


def test_empty_strings_are_not_segments() -> None:
    assert _one({"role": "user", "content": "", "name": "", "tool_call_id": ""}) == []
    assert _one({"role": "user", "content": [{"type": "text", "text": ""}]}) == []


@pytest.mark.parametrize(
    "payload",
    [
        [],
        "text",
        None,
        {},
        {"messages": "hi"},
        {"messages": {"0": {"role": "user", "content": "hi"}}},
        {"messages": None},
    ],
)
def test_wrong_shape_is_refused(payload: object) -> None:
    with pytest.raises(PayloadError) as info:
        openai_chat.segments(payload)
    assert "hi" not in str(info.value)


@pytest.mark.parametrize(
    "where",
    ["content", "tool_calls", "extra", "metadata", "unknown_top", "tools"],
)
def test_deep_nesting_is_refused_without_recursion_error(where: str) -> None:
    deep = nested(10_000)
    payload: dict[str, object] = {"messages": [{"role": "user", "content": "x"}]}
    if where == "content":
        payload["messages"] = [{"role": "user", "content": [{"type": "text", "text": deep}]}]
    elif where == "tool_calls":
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": deep}}
        payload["messages"] = [{"role": "assistant", "tool_calls": [call]}]
    elif where == "extra":
        payload["messages"] = [{"role": "user", "content": "x", "extra": deep}]
    elif where == "tools":
        payload["tools"] = [{"type": "function", "function": {"name": "f", "parameters": deep}}]
    else:
        payload["metadata" if where == "metadata" else "vendor"] = deep
    with pytest.raises(PayloadError, match="deeper than 64"):
        openai_chat.segments(payload)


def test_payload_is_not_mutated() -> None:
    payload = _sdk_payload()
    before = copy.deepcopy(payload)
    openai_chat.segments(payload)
    assert payload == before


def test_segments_survive_a_json_round_trip() -> None:
    payload = _sdk_payload()
    assert openai_chat.segments(json.loads(json.dumps(payload))) == openai_chat.segments(payload)


FAST_SHAPES: list[dict[str, object]] = [
    {"role": "user", "content": "plain"},
    {"role": "tool", "tool_call_id": "call_1", "content": "tool output"},
    {"role": "tool", "tool_call_id": "call_1", "content": ""},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": '{"a":1}'}},
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": ""}},
        ],
    },
    {
        "role": "assistant",
        "content": "calling",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
        ],
    },
    {"role": "assistant", "content": "data:text/plain;base64,aGVsbG8=", "tool_calls": []},
    {"tool_call_id": TOKEN, "content": '{"token": "t"}', "role": "tool"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "type": "function",
                "function": {"arguments": '{"k": "a", "p": ["b"]}', "name": "n"},
                "id": TOKEN,
            },
        ],
    },
]


@pytest.mark.parametrize("message", FAST_SHAPES)
def test_fast_paths_equal_general_walk(message: dict[str, object]) -> None:
    from gateway.wire.generic import walk_message
    from gateway.wire.openai_chat import _REGISTRY

    general: list[Segment] = []
    walk_message(message, "messages[0]", 0, general, 3, _REGISTRY)
    assert openai_chat.segments({"messages": [message]}) == general
