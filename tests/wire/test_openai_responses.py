"""Responses: every input item type and parameter, as the openai SDK sends them."""

from __future__ import annotations

import copy
import json

import pytest

from gateway.guard import floor
from gateway.wire import blobs, generic, openai_responses
from gateway.wire.base import PayloadError, Segment
from tests.wire.sdk_capture import (
    MP3_B64,
    OP,
    PDF_B64,
    PDF_TEXT,
    PDF_URL,
    PNG_B64,
    PNG_URL,
    U,
    item,
    nested,
    openai_body,
    seg,
)

ITEMS: list[dict[str, object]] = [
    {"role": "developer", "content": "Use tools when needed."},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Summarise the attachments."},
            {"type": "input_image", "image_url": "https://img.example/chart.png", "detail": "auto"},
            {"type": "input_image", "image_url": PNG_URL, "detail": "low"},
            {"type": "input_image", "file_id": "file-img", "detail": "high"},
            {"type": "input_file", "file_data": PDF_URL, "filename": "q3.pdf"},
            {"type": "input_file", "file_url": "https://files.example/q3.pdf"},
            {"type": "input_file", "file_id": "file-pdf"},
        ],
    },
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": "Here is the summary.",
                "annotations": [
                    {
                        "type": "url_citation",
                        "url": "https://news.example/a",
                        "title": "Source A",
                        "start_index": 0,
                        "end_index": 4,
                    }
                ],
                "logprobs": [{"token": "Here", "bytes": [72], "logprob": -0.1, "top_logprobs": []}],
            },
            {"type": "refusal", "refusal": "Not the private part."},
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Need to read the file."}],
        "content": [{"type": "reasoning_text", "text": "raw chain"}],
        "encrypted_content": "gAAAAABencrypted",
    },
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "read_file",
        "arguments": '{"path": "secrets.txt"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "file contents"},
    {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [
            {"type": "input_text", "text": "part one"},
            {"type": "input_image", "image_url": PNG_URL},
            {
                "type": "input_file",
                "file_data": "data:text/plain,hello%20file",
                "filename": "h.txt",
            },
        ],
    },
    {"type": "custom_tool_call", "call_id": "call_3", "name": "sql", "input": "SELECT 1"},
    {"type": "custom_tool_call_output", "call_id": "call_3", "output": "1 row"},
    {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_4",
        "status": "completed",
        "action": {"type": "type", "text": "hunter2"},
        "pending_safety_checks": [],
    },
    {
        "type": "computer_call_output",
        "call_id": "call_4",
        "output": {"type": "computer_screenshot", "image_url": PNG_URL},
        "acknowledged_safety_checks": [
            {"id": "sc_1", "code": "malicious_instructions", "message": "Check the page."}
        ],
    },
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "quarterly results"},
    },
    {
        "type": "file_search_call",
        "id": "fs_1",
        "status": "completed",
        "queries": ["revenue"],
        "results": [
            {"file_id": "file-x", "filename": "r.md", "score": 0.9, "text": "Revenue grew."}
        ],
    },
    {
        "type": "code_interpreter_call",
        "id": "ci_1",
        "container_id": "cntr_1",
        "status": "completed",
        "code": "print(1)",
        "outputs": [{"type": "logs", "logs": "1"}],
    },
    {
        "type": "local_shell_call",
        "id": "ls_1",
        "call_id": "call_5",
        "status": "completed",
        "action": {"type": "exec", "command": ["env"], "env": {"TOKEN": "t0k"}},
    },
    {"type": "local_shell_call_output", "id": "ls_1", "output": "PATH=/bin"},
    {"type": "shell_call", "call_id": "call_6", "action": {"commands": ["ls -la"]}},
    {
        "type": "shell_call_output",
        "call_id": "call_6",
        "output": [
            {"stdout": "total 0", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
        ],
    },
    {
        "type": "apply_patch_call",
        "call_id": "call_7",
        "status": "completed",
        "operation": {"type": "update_file", "path": "a.py", "diff": "-x\n+y"},
    },
    {"type": "apply_patch_call_output", "call_id": "call_7", "status": "completed", "output": "ok"},
    {
        "type": "image_generation_call",
        "id": "ig_1",
        "status": "completed",
        "result": PNG_B64,
        "revised_prompt": "a cat",
    },
    {
        "type": "mcp_list_tools",
        "id": "ml_1",
        "server_label": "docs",
        "tools": [{"name": "search", "description": "Search docs.", "input_schema": {}}],
    },
    {
        "type": "mcp_approval_request",
        "id": "mr_1",
        "server_label": "docs",
        "name": "search",
        "arguments": '{"q": "x"}',
    },
    {
        "type": "mcp_approval_response",
        "approval_request_id": "mr_1",
        "approve": True,
        "reason": "fine",
    },
    {
        "type": "mcp_call",
        "id": "mc_1",
        "server_label": "docs",
        "name": "search",
        "arguments": '{"q": "x"}',
        "output": "mcp result",
        "error": None,
    },
    {"type": "item_reference", "id": "msg_0"},
    {"id": "msg_00"},
]


def _sdk_payload() -> dict[str, object]:
    return openai_body(
        lambda client: client.responses.create(
            model="gpt-5",
            instructions="You are a careful analyst.",
            input=ITEMS,
            tools=[
                {
                    "type": "function",
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                    "strict": True,
                },
                {
                    "type": "mcp",
                    "server_label": "docs",
                    "server_url": "https://mcp.example/sse",
                    "headers": {"Authorization": "Bearer mcp-token"},
                    "require_approval": "never",
                },
            ],
            tool_choice="auto",
            text={
                "format": {
                    "type": "json_schema",
                    "name": "summary",
                    "schema": {"type": "object", "description": "A summary."},
                },
                "verbosity": "low",
            },
            prompt={"id": "pmpt_1", "version": "2", "variables": {"city": "Paris"}},
            metadata={"run": "r-1"},
            reasoning={"effort": "high"},
            include=["reasoning.encrypted_content"],
            previous_response_id="resp_0",
            store=False,
            stream=True,
            user="user-42",
        )
    )


def test_sdk_request_every_item_type() -> None:
    assert openai_responses.segments(_sdk_payload()) == [
        seg("model", "request", "gpt-5", OP),
        item(0, "content", "developer", "Use tools when needed."),
        item(1, "content[0].text", "user", "Summarise the attachments."),
        item(1, "content[1].image_url", "user", "https://img.example/chart.png"),
        # content[2] image data: URL (media), and its "detail" values are known words
        item(1, "content[3].file_id", "user", "file-img", OP),
        item(1, "content[4].file_data", "user", PDF_TEXT, U),
        item(1, "content[4].filename", "user", "q3.pdf"),
        item(1, "content[5].file_url", "user", "https://files.example/q3.pdf"),
        item(1, "content[6].file_id", "user", "file-pdf", OP),
        item(2, "id", "assistant", "msg_1", OP),
        item(2, "content[0].text", "assistant", "Here is the summary."),
        item(2, "content[0].annotations[0].url", "assistant", "https://news.example/a", U),
        item(2, "content[0].annotations[0].title", "assistant", "Source A", U),
        # the same text token by token: one segment
        item(2, "content[0].logprobs", "assistant", "Here", OP),
        item(2, "content[1].refusal", "assistant", "Not the private part."),
        item(3, "id", "reasoning", "rs_1", OP),
        item(3, "summary[0].text", "reasoning", "Need to read the file."),
        item(3, "content[0].text", "reasoning", "raw chain"),
        item(3, "encrypted_content", "reasoning", "gAAAAABencrypted", OP),
        item(4, "call_id", "function_call", "call_1", OP),
        item(4, "name", "function_call", "read_file"),
        item(4, "arguments", "function_call", '{"path": "secrets.txt"}'),
        item(5, "call_id", "function_call_output", "call_1", OP),
        item(5, "output", "function_call_output", "file contents", U),
        item(6, "call_id", "function_call_output", "call_2", OP),
        item(6, "output[0].text", "function_call_output", "part one", U),
        *[
            item(6, path, "function_call_output", text, U)
            for path, text in _data_url_segments(
                "output[2].file_data", "data:text/plain,hello%20file"
            )
        ],
        item(6, "output[2].filename", "function_call_output", "h.txt", U),
        item(7, "call_id", "custom_tool_call", "call_3", OP),
        item(7, "name", "custom_tool_call", "sql"),
        item(7, "input", "custom_tool_call", "SELECT 1"),
        item(8, "call_id", "custom_tool_call_output", "call_3", OP),
        item(8, "output", "custom_tool_call_output", "1 row", U),
        item(9, "id", "computer_call", "cu_1", OP),
        item(9, "call_id", "computer_call", "call_4", OP),
        item(9, "action.text", "computer_call", "hunter2"),
        item(10, "call_id", "computer_call_output", "call_4", OP),
        item(10, "acknowledged_safety_checks[0].id", "computer_call_output", "sc_1", OP),
        item(
            10,
            "acknowledged_safety_checks[0].code",
            "computer_call_output",
            "malicious_instructions",
        ),
        item(
            10, "acknowledged_safety_checks[0].message", "computer_call_output", "Check the page."
        ),
        item(11, "id", "web_search_call", "ws_1", OP),
        item(11, "action.query", "web_search_call", "quarterly results"),
        item(12, "id", "file_search_call", "fs_1", OP),
        item(12, "queries[0]", "file_search_call", "revenue"),
        # results came from outside and are free-form (attributes): nothing structural
        item(12, "results[0].file_id", "file_search_call", "file-x", U),
        item(12, "results[0].filename", "file_search_call", "r.md", U),
        item(12, "results[0].text", "file_search_call", "Revenue grew.", U),
        item(13, "id", "code_interpreter_call", "ci_1", OP),
        item(13, "container_id", "code_interpreter_call", "cntr_1", OP),
        item(13, "code", "code_interpreter_call", "print(1)"),
        item(13, "outputs[0].logs", "code_interpreter_call", "1", U),
        item(14, "id", "local_shell_call", "ls_1", OP),
        item(14, "call_id", "local_shell_call", "call_5", OP),
        item(14, "action.command[0]", "local_shell_call", "env"),
        item(14, "action.env.<key#0>", "local_shell_call", "TOKEN", OP),
        item(14, "action.env.TOKEN", "local_shell_call", "t0k"),
        item(14, "action.env.TOKEN(pair)", "local_shell_call", '"TOKEN": "t0k"', OP),
        item(15, "id", "local_shell_call_output", "ls_1", OP),
        item(15, "output", "local_shell_call_output", "PATH=/bin", U),
        item(16, "call_id", "shell_call", "call_6", OP),
        item(16, "action.commands[0]", "shell_call", "ls -la"),
        item(17, "call_id", "shell_call_output", "call_6", OP),
        item(17, "output[0].stdout", "shell_call_output", "total 0", U),
        item(18, "call_id", "apply_patch_call", "call_7", OP),
        item(18, "operation.path", "apply_patch_call", "a.py"),
        item(18, "operation.diff", "apply_patch_call", "-x\n+y"),
        item(19, "call_id", "apply_patch_call_output", "call_7", OP),
        item(19, "output", "apply_patch_call_output", "ok", U),
        # image_generation_call.result is a real PNG
        item(20, "id", "image_generation_call", "ig_1", OP),
        item(20, "revised_prompt", "image_generation_call", "a cat"),
        item(21, "id", "mcp_list_tools", "ml_1", OP),
        item(21, "server_label", "mcp_list_tools", "docs"),
        item(21, "tools[0].name", "mcp_list_tools", "search", U),
        item(21, "tools[0].description", "mcp_list_tools", "Search docs.", U),
        item(22, "id", "mcp_approval_request", "mr_1", OP),
        item(22, "server_label", "mcp_approval_request", "docs"),
        item(22, "name", "mcp_approval_request", "search"),
        item(22, "arguments", "mcp_approval_request", '{"q": "x"}'),
        item(23, "approval_request_id", "mcp_approval_response", "mr_1", OP),
        item(23, "reason", "mcp_approval_response", "fine"),
        item(24, "id", "mcp_call", "mc_1", OP),
        item(24, "server_label", "mcp_call", "docs"),
        item(24, "name", "mcp_call", "search"),
        item(24, "arguments", "mcp_call", '{"q": "x"}'),
        item(24, "output", "mcp_call", "mcp result", U),
        # an item_reference, and one without its optional type
        item(25, "id", "item_reference", "msg_0", OP),
        item(26, "id", "item_reference", "msg_00", OP),
        seg("instructions", "system", "You are a careful analyst."),
        seg("metadata.<key#0>", "request", "run", OP),
        seg("metadata.run", "request", "r-1"),
        seg("previous_response_id", "request", "resp_0", OP),
        seg("prompt.id", "request", "pmpt_1", OP),
        seg("prompt.version", "request", "2"),
        seg("prompt.variables.city", "request", "Paris"),
        seg("text.format.name", "request", "summary"),
        seg("text.format.schema.description", "request", "A summary."),
        seg("tools[0].name", "request", "read_file"),
        seg("tools[0].description", "request", "Read a file."),
        seg("tools[1].server_label", "request", "docs"),
        seg("tools[1].server_url", "request", "https://mcp.example/sse"),
        # A credential meant for the provider is still text the policy must see,
        # and its header name is its context.
        seg("tools[1].headers.<key#0>", "request", "Authorization", OP),
        seg("tools[1].headers.Authorization", "request", "Bearer mcp-token"),
        seg(
            "tools[1].headers.Authorization(pair)",
            "request",
            '"Authorization": "Bearer mcp-token"',
            OP,
        ),
        seg("tools[1].require_approval", "request", "never"),
        seg("user", "request", "user-42"),
    ]


def _data_url_segments(path: str, url: str) -> list[tuple[str, str]]:
    """The (path, text) pairs the payload code makes of a data: URL at ``path``."""
    texts = blobs.data_url_texts(url)
    return [(path if n == 0 else f"{path}(decoded#{n})", t) for n, t in enumerate(texts) if t]


def test_string_input_is_the_user_turn() -> None:
    assert openai_responses.segments({"input": "hello", "instructions": "be"}) == [
        seg("input", "user", "hello"),
        seg("instructions", "system", "be"),
    ]


def test_input_may_be_absent() -> None:
    payload = {"model": "m", "previous_response_id": "resp_1", "prompt": {"id": "pmpt_1"}}
    assert openai_responses.segments(payload) == [
        seg("model", "request", "m", OP),
        seg("previous_response_id", "request", "resp_1", OP),
        seg("prompt.id", "request", "pmpt_1", OP),
    ]


def test_function_call_output_with_unknown_part_type() -> None:
    output = [{"type": "input_video", "video_url": "https://v.example/a.mp4"}]
    payload = {"input": [{"type": "function_call_output", "call_id": "c", "output": output}]}
    assert openai_responses.segments(payload) == [
        item(0, "call_id", "function_call_output", "c", OP),
        item(0, "output[0].type", "function_call_output", "input_video", U),
        item(0, "output[0].<key#1>", "function_call_output", "video_url", U),
        item(0, "output[0].video_url", "function_call_output", "https://v.example/a.mp4", U),
    ]


def test_unknown_item_type_is_scanned_in_full_as_untrusted() -> None:
    payload = {
        "input": [
            {"type": "holo_call", "id": "h1", "payload": {"note": "n", "ids": ["a"]}},
            {"type": "sk-live-" + "9" * 30, "x": "y"},
        ]
    }
    # An unknown type is never a label (labels are echoed): it is text.
    assert openai_responses.segments(payload) == [
        item(0, "type", "unknown", "holo_call", U),
        item(0, "id", "unknown", "h1", U),
        item(0, "<key#2>", "unknown", "payload", U),
        item(0, "payload.<key#0>", "unknown", "note", U),
        item(0, "payload.note", "unknown", "n", U),
        item(0, "payload.ids[0]", "unknown", "a", U),
        item(1, "type", "unknown", "sk-live-" + "9" * 30, U),
        item(1, "x", "unknown", "y", U),
    ]


def test_unknown_message_role_is_untrusted() -> None:
    payload = {"input": [{"type": "message", "role": "critic", "content": "meh"}]}
    assert openai_responses.segments(payload) == [
        item(0, "role", "unknown", "critic", U),
        item(0, "content", "unknown", "meh", U),
    ]


def test_non_object_items_are_scanned() -> None:
    payload = {"input": ["loose", 3, None, ["x"]]}
    assert openai_responses.segments(payload) == [
        seg("input[0]", "unknown", "loose", U, 0),
        seg("input[3][0]", "unknown", "x", U, 3),
    ]


def test_audio_and_textual_file_data() -> None:
    parts = [
        {"type": "input_audio", "input_audio": {"data": MP3_B64, "format": "mp3"}},
        {"type": "input_file", "file_data": "data:text/markdown;base64,IyBUb2tlbnMKZ2hwX3h4eA=="},
        {"type": "input_file", "file_data": PDF_B64, "filename": "raw.pdf"},
    ]
    payload = {"input": [{"role": "user", "content": parts}]}
    markdown = "data:text/markdown;base64,IyBUb2tlbnMKZ2hwX3h4eA=="
    assert openai_responses.segments(payload) == [
        *[
            item(0, path, "user", text, U)
            for path, text in _data_url_segments("content[1].file_data", markdown)
        ],
        item(0, "content[2].file_data", "user", PDF_TEXT, U),
        item(0, "content[2].filename", "user", "raw.pdf"),
    ]
    assert "# Tokens\nghp_xxx" in [s.text for s in openai_responses.segments(payload)]


def test_tool_search_arguments_are_free_form() -> None:
    call = {"type": "tool_search_call", "call_id": "c", "arguments": {"id": "free", "type": "text"}}
    # free-form: "id" and "type" there are the tool's own fields, and text
    output = {
        "type": "tool_search_output",
        "tools": [{"type": "function", "name": "f", "description": "found"}],
    }
    assert openai_responses.segments({"input": [call, output]}) == [
        item(0, "call_id", "tool_search_call", "c", OP),
        item(0, "arguments.id", "tool_search_call", "free"),
        item(0, "arguments.type", "tool_search_call", "text"),
        item(0, "arguments(joined)", "tool_search_call", "freetext", OP),
        item(1, "tools[0].name", "tool_search_output", "f", U),
        item(1, "tools[0].description", "tool_search_output", "found", U),
    ]


def test_mcp_call_error_and_program_items() -> None:
    payload = {
        "input": [
            {
                "type": "mcp_call",
                "id": "m",
                "name": "n",
                "arguments": "{}",
                "server_label": "s",
                "error": {"type": "mcp_tool_execution_error", "content": {"detail": "boom"}},
            },
            {
                "type": "program",
                "id": "p",
                "call_id": "c",
                "code": "run()",
                "fingerprint": "3f2a9c1e8b7d6a5f",
            },
            {
                "type": "program_output",
                "id": "p",
                "call_id": "c",
                "result": "done",
                "status": "completed",
            },
        ]
    }
    assert openai_responses.segments(payload) == [
        item(0, "id", "mcp_call", "m", OP),
        item(0, "name", "mcp_call", "n"),
        item(0, "arguments", "mcp_call", "{}"),
        item(0, "server_label", "mcp_call", "s"),
        item(0, "error.type", "mcp_call", "mcp_tool_execution_error", U),
        item(0, "error.content.detail", "mcp_call", "boom", U),
        item(1, "id", "program", "p", OP),
        item(1, "call_id", "program", "c", OP),
        item(1, "code", "program", "run()"),
        item(1, "fingerprint", "program", "3f2a9c1e8b7d6a5f", OP),
        item(2, "id", "program_output", "p", OP),
        item(2, "call_id", "program_output", "c", OP),
        item(2, "result", "program_output", "done", U),
    ]


def test_unknown_top_level_keys_are_scanned_as_untrusted() -> None:
    payload = {"input": "hi", "vendor_context": {"notes": ["n1"]}}
    assert openai_responses.segments(payload) == [
        seg("input", "user", "hi"),
        seg("<key#1>", "unknown", "vendor_context", U),
        seg("vendor_context.<key#0>", "unknown", "notes", U),
        seg("vendor_context.notes[0]", "unknown", "n1", U),
    ]


@pytest.mark.parametrize(
    "payload",
    [[], "hello", 1, None, {"input": {"role": "user"}}, {"input": 3}],
)
def test_wrong_shape_is_refused(payload: object) -> None:
    with pytest.raises(PayloadError):
        openai_responses.segments(payload)


@pytest.mark.parametrize("where", ["output", "arguments", "item", "metadata", "tools"])
def test_deep_nesting_is_refused_without_recursion_error(where: str) -> None:
    deep = nested(10_000)
    payload: dict[str, object] = {"input": []}
    if where == "output":
        payload["input"] = [{"type": "function_call_output", "call_id": "c", "output": deep}]
    elif where == "arguments":
        payload["input"] = [{"type": "tool_search_call", "arguments": deep}]
    elif where == "item":
        payload["input"] = [deep]
    elif where == "tools":
        payload["tools"] = [{"type": "function", "name": "f", "parameters": deep}]
    else:
        payload["metadata"] = deep
    with pytest.raises(PayloadError, match="deeper than 64"):
        openai_responses.segments(payload)


def test_payload_is_not_mutated() -> None:
    payload = _sdk_payload()
    before = copy.deepcopy(payload)
    openai_responses.segments(payload)
    assert payload == before


def test_index_is_the_item_index() -> None:
    segments: list[Segment] = openai_responses.segments(_sdk_payload())
    for segment in segments:
        if segment.path.startswith("input["):
            assert segment.path.startswith(f"input[{segment.index}]")
        else:
            assert segment.index is None


def test_conversation_items_from_the_sdk() -> None:
    output = {"type": "function_call_output", "call_id": "c", "output": "tool said"}
    created = openai_body(
        lambda client: client.conversations.create(
            items=[{"role": "user", "content": "hi"}, output], metadata={"topic": "t"}
        )
    )
    assert openai_responses.conversation_segments(created) == [
        seg("items[0].content", "user", "hi", index=0),
        seg("items[1].call_id", "function_call_output", "c", OP, 1),
        seg("items[1].output", "function_call_output", "tool said", U, 1),
        seg("metadata.<key#0>", "request", "topic", OP),
        seg("metadata.topic", "request", "t"),
    ]
    added = openai_body(lambda client: client.conversations.items.create("conv_1", items=[output]))
    assert openai_responses.conversation_segments(added) == [
        seg("items[0].call_id", "function_call_output", "c", OP, 0),
        seg("items[0].output", "function_call_output", "tool said", U, 0),
    ]


@pytest.mark.parametrize("payload", [{"metadata": {"a": "b"}}, {"items": "x"}, [], None])
def test_conversation_other_shapes_fall_back_to_every_string(payload: object) -> None:
    assert openai_responses.conversation_segments(payload) == generic.segments(payload)


TOKEN = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
PASSWORD = "Xq7!" + "Lm2pR9vT#k4"


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"model": TOKEN}, "model"),
        ({"previous_response_id": TOKEN}, "previous_response_id"),
        ({"conversation": TOKEN}, "conversation"),
        ({"conversation": {"id": TOKEN}}, "conversation.id"),
        ({"include": ["reasoning.encrypted_content", TOKEN]}, "include[1]"),
        ({"truncation": TOKEN}, "truncation"),
        ({"service_tier": TOKEN}, "service_tier"),
        ({"tool_choice": TOKEN}, "tool_choice"),
        ({"prompt_cache_retention": TOKEN}, "prompt_cache_retention"),
        ({"reasoning": {"effort": TOKEN}}, "reasoning.effort"),
        ({"text": {"format": {"type": TOKEN}}}, "text.format.type"),
        ({"text": {"verbosity": TOKEN}}, "text.verbosity"),
        ({"prompt": {"id": TOKEN}}, "prompt.id"),
        ({"metadata": {TOKEN: "v"}}, "metadata.<key#0>"),
    ],
)
def test_request_ids_and_enums_are_opaque_segments(fields: dict[str, object], path: str) -> None:
    assert seg(path, "request", TOKEN, OP) in openai_responses.segments(fields)


@pytest.mark.parametrize(
    ("entry", "path", "role"),
    [
        (
            {"type": "function_call_output", "call_id": TOKEN, "output": "o"},
            "call_id",
            "function_call_output",
        ),
        (
            {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": TOKEN},
            "encrypted_content",
            "reasoning",
        ),
        ({"type": "item_reference", "id": TOKEN}, "id", "item_reference"),
        ({"type": "message", "role": "user", "status": TOKEN, "content": []}, "status", "user"),
        (
            {"role": "user", "content": [{"type": "input_image", "detail": TOKEN}]},
            "content[0].detail",
            "user",
        ),
        (
            {"role": "user", "content": [{"type": "input_file", "file_id": TOKEN}]},
            "content[0].file_id",
            "user",
        ),
        ({"type": "program", "code": "c", "fingerprint": TOKEN}, "fingerprint", "program"),
    ],
)
def test_item_ids_and_enums_are_opaque_segments(
    entry: dict[str, object], path: str, role: str
) -> None:
    assert item(0, path, role, TOKEN, OP) in openai_responses.segments({"input": [entry]})


def test_call_arguments_are_read_as_json() -> None:
    arguments = json.dumps(
        {"user": "ops", "db_password": PASSWORD, "parts": [TOKEN[:9], TOKEN[9:]]}
    )
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": arguments}
    mcp = {"type": "mcp_call", "id": "m", "server_label": "s", "name": "n", "arguments": arguments}
    got = openai_responses.segments({"input": [call, mcp]})
    for i, role in enumerate(("function_call", "mcp_call")):
        assert item(i, "arguments(pair)", role, f'"db_password": "{PASSWORD}"', OP) in got
        joined = f"ops{PASSWORD}{TOKEN}\n{PASSWORD}{TOKEN}\n{TOKEN}"
        assert item(i, "arguments(joined)", role, joined, OP) in got
    assert {k for s in got for k, _ in floor.find(s.text)} == {
        "github_token",
        "password_assignment",
    }


def test_a_token_split_across_parts_is_found() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "input_text", "text": TOKEN[:5]},
            {"type": "input_text", "text": TOKEN[5:]},
        ],
    }
    output = {
        "type": "function_call_output",
        "call_id": "c",
        "output": [
            {"type": "input_text", "text": TOKEN[:20]},
            {"type": "input_text", "text": TOKEN[20:]},
        ],
    }
    got = openai_responses.segments(
        {
            "input": [message, output],
            "instructions": [
                {"type": "input_text", "text": TOKEN[:3]},
                {"type": "input_text", "text": TOKEN[3:]},
            ],
        }
    )
    joined = [s for s in got if s.path.endswith("(joined)")]
    assert joined == [
        item(0, "content(joined)", "user", TOKEN, OP),
        item(1, "output(joined)", "function_call_output", TOKEN, OP),
        seg("instructions(joined)", "system", TOKEN, OP),
    ]
    assert [s for s in got if floor.find(s.text)] == joined
