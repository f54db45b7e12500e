"""The answer editors, without sockets: calls found whole, released or replaced consistently."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from gateway.wire.calls import ToolCall
from gateway.wire.replies import AnswerStream, Ruling, body_editor
from gateway.wire.sse import SSEDecoder
from tests import replies
from tests.replies import Call

CALLS = [Call.shell("ls -la"), Call.shell("rm -rf /"), Call("read_file", '{"path": "a.txt"}')]
DENIED = "[denied] not run"


def _rule(call: ToolCall) -> Ruling:
    return Ruling(False, DENIED) if "rm -rf" in call.arguments else Ruling(True)


def _edit(stream: list[bytes], cuts: int = 0, seed: int = 0) -> tuple[list[ToolCall], bytes]:
    """Run the stream through the editor, its bytes split at ``cuts`` random places."""
    data = b"".join(stream)
    rng = random.Random(seed)
    points = sorted(rng.sample(range(1, len(data)), cuts)) if cuts else []
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    decoder, editor = SSEDecoder(), AnswerStream()
    seen: list[ToolCall] = []
    out: list[bytes] = []
    for chunk in chunks:
        for event in decoder.feed(chunk):
            calls = editor.feed(event)
            seen += calls
            out.append(editor.release([_rule(c) for c in calls]))
    assert not editor.pending()
    return seen, b"".join(out)


def _events(data: bytes) -> list[tuple[str | None, Any]]:
    out: list[tuple[str | None, Any]] = []
    for event in SSEDecoder().feed(data):
        if event.dispatch:
            out.append(
                (event.event, event.data if event.data == "[DONE]" else json.loads(event.data))
            )
    return out


@pytest.mark.parametrize("cuts", [0, 1, 7, 40])
def test_chat_stream_calls_are_judged_whole_and_renumbered(cuts: int) -> None:
    seen, out = _edit(replies.chat_events("checking", CALLS), cuts, seed=cuts)
    assert [(c.name, c.arguments) for c in seen] == [(c.name, c.arguments) for c in CALLS]
    assert [c.call_id for c in seen] == ["call_0", "call_1", "call_2"]
    events = _events(out)
    assert events[-1] == (None, "[DONE]")
    calls: dict[int, dict[str, Any]] = {}
    content = []
    finish = None
    for _, chunk in events[:-1]:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            for fragment in delta.get("tool_calls", ()):
                calls.setdefault(fragment["index"], fragment)
            if delta.get("content"):
                content.append(delta["content"])
            finish = choice["finish_reason"] or finish
    # The denied call is gone, the others keep their ids and are indexed 0 and 1.
    assert sorted(calls) == [0, 1]
    assert [calls[i]["id"] for i in (0, 1)] == ["call_0", "call_2"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"command": "ls -la"}
    assert "".join(content) == "checking\n\n" + DENIED
    assert finish == "tool_calls"


def test_chat_stream_all_denied_ends_the_turn() -> None:
    _, out = _edit(replies.chat_events(None, [Call.shell("rm -rf /")]))
    chunks = [c for _, c in _events(out)[:-1]]
    assert not any("tool_calls" in ch["delta"] for c in chunks for ch in c["choices"])
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert finishes == ["stop"]
    # The usage chunk still arrives, after the finish.
    assert "usage" in chunks[-1]


def test_text_only_stream_is_relayed_byte_for_byte() -> None:
    for stream in (
        replies.chat_events("hello there", []),
        replies.responses_events("hello there", []),
        replies.anthropic_events("hello there", []),
    ):
        seen, out = _edit(stream, cuts=9)
        assert seen == []
        assert out == b"".join(stream)


@pytest.mark.parametrize("cuts", [0, 13])
def test_responses_stream_replaces_a_denied_item_in_place(cuts: int) -> None:
    seen, out = _edit(replies.responses_events("checking", CALLS), cuts)
    assert [c.name for c in seen] == ["shell", "shell", "read_file"]
    events = [p for _, p in _events(out)]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [(i["type"], i.get("name")) for i in done] == [
        ("message", None),
        ("function_call", "shell"),
        ("message", None),
        ("function_call", "read_file"),
    ]
    assert done[2]["content"][0]["text"] == DENIED
    final = events[-1]["response"]["output"]
    assert [i["type"] for i in final] == ["message", "function_call", "message", "function_call"]
    assert final[2] == done[2]
    # Every event about the denied item's index belongs to the replacement.
    about_2 = [e for e in events if e.get("output_index") == 2]
    assert all(e.get("item_id", e.get("item", {}).get("id")) == done[2]["id"] for e in about_2)


@pytest.mark.parametrize("cuts", [0, 11])
def test_anthropic_stream_replaces_a_denied_block_at_its_index(cuts: int) -> None:
    seen, out = _edit(replies.anthropic_events("checking", CALLS), cuts)
    assert [json.loads(c.arguments) for c in seen] == [json.loads(c.arguments) for c in CALLS]
    events = [p for _, p in _events(out)]
    starts = [
        (e["index"], e["content_block"]["type"])
        for e in events
        if e["type"] == "content_block_start"
    ]
    assert starts == [(0, "text"), (1, "tool_use"), (2, "text"), (3, "tool_use")]
    stops = [e["index"] for e in events if e["type"] == "content_block_stop"]
    assert stops == [0, 1, 2, 3]
    [delta] = [e for e in events if e["type"] == "message_delta"]
    assert delta["delta"]["stop_reason"] == "tool_use"


def test_anthropic_all_denied_ends_the_turn() -> None:
    _, out = _edit(replies.anthropic_events(None, [Call.shell("rm -rf /")]))
    events = [p for _, p in _events(out)]
    [delta] = [e for e in events if e["type"] == "message_delta"]
    assert delta["delta"]["stop_reason"] == "end_turn"
    texts = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert texts == [DENIED]


def test_an_incomplete_call_is_pending_and_never_released() -> None:
    stream = replies.anthropic_events(None, [Call.shell("ls")])
    decoder, editor = SSEDecoder(), AnswerStream()
    out = []
    for event in decoder.feed(b"".join(stream[:-3])):
        out.append(editor.release([_rule(c) for c in editor.feed(event)]))
    assert editor.pending()
    assert b"tool_use" not in b"".join(out)


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (replies.chat_completion("checking", CALLS), "chat"),
        (replies.response("checking", CALLS), "responses"),
        (replies.anthropic_message("checking", CALLS), "anthropic"),
    ],
)
def test_whole_answers_get_the_same_judgement(body: dict[str, Any], kind: str) -> None:
    editor = body_editor(body)
    assert editor is not None
    calls = editor.calls()
    assert [json.loads(c.arguments) for c in calls] == [json.loads(c.arguments) for c in CALLS]
    edited = editor.release([_rule(c) for c in calls])
    text = json.dumps(edited)
    assert "rm -rf" not in text and DENIED in text and "ls -la" in text
    if kind == "chat":
        message = edited["choices"][0]["message"]
        assert [c["id"] for c in message["tool_calls"]] == ["call_0", "call_2"]
        assert message["content"] == "checking\n\n" + DENIED
    # The original is untouched: the editor works on a copy.
    assert "rm -rf" in json.dumps(body)


def test_whole_answer_all_denied_ends_the_turn() -> None:
    for body, read in (
        (
            replies.chat_completion(None, [Call.shell("rm -rf /")]),
            lambda b: b["choices"][0]["finish_reason"],
        ),
        (replies.anthropic_message(None, [Call.shell("rm -rf /")]), lambda b: b["stop_reason"]),
    ):
        editor = body_editor(body)
        assert editor is not None
        edited = editor.release([_rule(c) for c in editor.calls()])
        assert read(edited) in ("stop", "end_turn")


def test_bodies_that_are_not_answers_are_left_alone() -> None:
    assert body_editor({"object": "list", "data": []}) is None
    assert body_editor([1, 2]) is None


def _sse_all(payloads: list[tuple[str | None, dict[str, Any] | str]]) -> list[bytes]:
    out = []
    for name, payload in payloads:
        head = f"event: {name}\n" if name else ""
        data = payload if isinstance(payload, str) else json.dumps(payload)
        out.append(f"{head}data: {data}\n\n".encode())
    return out


def _chunk(choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
    }


def test_chat_legacy_function_call_is_judged() -> None:
    stream = _sse_all(
        [
            (
                None,
                _chunk(
                    [
                        {
                            "index": 0,
                            "delta": {
                                "role": "assistant",
                                "function_call": {"name": "shell", "arguments": ""},
                            },
                            "finish_reason": None,
                        }
                    ]
                ),
            ),
            (
                None,
                _chunk(
                    [
                        {
                            "index": 0,
                            "delta": {"function_call": {"arguments": '{"command": "rm -rf /"}'}},
                            "finish_reason": None,
                        }
                    ]
                ),
            ),
            (None, _chunk([{"index": 0, "delta": {}, "finish_reason": "function_call"}])),
            (None, "[DONE]"),
        ]
    )
    seen, out = _edit(stream)
    assert [(c.name, c.kind) for c in seen] == [("shell", "function")]
    chunks = [c for _, c in _events(out)[:-1]]
    assert not any("function_call" in ch["delta"] for c in chunks for ch in c["choices"])
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    # The first chunk kept its role.
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}


def test_chat_choices_are_judged_apart_and_done_ends_unfinished_ones() -> None:
    def frag(choice: int, index: int, args: str, head: bool) -> dict[str, Any]:
        call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
        if head:
            call.update(id=f"call_{choice}_{index}", type="function")
            call["function"]["name"] = "shell"
        return {"index": choice, "delta": {"tool_calls": [call]}, "finish_reason": None}

    stream = _sse_all(
        [
            (
                None,
                _chunk([frag(0, 0, '{"command": "ls"}', True), frag(1, 0, '{"command": ', True)]),
            ),
            (None, _chunk([frag(1, 0, '"rm -rf /"}', False)])),
            (None, _chunk([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])),
            # Choice 1 never gets a finish reason: [DONE] completes it.
            (None, "[DONE]"),
        ]
    )
    seen, out = _edit(stream)
    assert [c.call_id for c in seen] == ["call_0_0", "call_1_0"]
    kept = {
        ch["index"]: ch["delta"]["tool_calls"][0]["id"]
        for _, c in _events(out)[:-1]
        for ch in c["choices"]
        if "tool_calls" in ch["delta"]
    }
    assert kept == {0: "call_0_0"}


def test_anthropic_tool_use_without_deltas_is_judged_from_its_start() -> None:
    block = {"type": "tool_use", "id": "toolu_9", "name": "shell", "input": {"command": "rm -rf ~"}}
    stream = _sse_all(
        [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "m",
                        "type": "message",
                        "role": "assistant",
                        "content": [],
                        "model": "c",
                        "stop_reason": None,
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                    },
                },
            ),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 1},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )
    decoder, editor = SSEDecoder(), AnswerStream()
    seen: list[ToolCall] = []
    for event in decoder.feed(b"".join(stream)):
        calls = editor.feed(event)
        seen += calls
        editor.release([Ruling(False, DENIED) for _ in calls])
    assert [json.loads(c.arguments) for c in seen] == [{"command": "rm -rf ~"}]


def test_responses_built_in_and_custom_calls_are_calls() -> None:
    body = replies.response("ok", [])
    body["output"] += [
        {
            "type": "custom_tool_call",
            "id": "ctc_1",
            "call_id": "call_c",
            "name": "apply",
            "input": "*** patch",
        },
        {
            "type": "local_shell_call",
            "id": "lsh_1",
            "call_id": "call_l",
            "status": "completed",
            "action": {"type": "exec", "command": ["bash", "-lc", "rm -rf /"], "env": {}},
        },
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    ]
    editor = body_editor(body)
    assert editor is not None
    calls = editor.calls()
    assert [(c.name, c.kind) for c in calls] == [
        ("apply", "custom"),
        ("local_shell", "local_shell_call"),
    ]
    assert json.loads(calls[1].arguments)["command"] == ["bash", "-lc", "rm -rf /"]
    edited = editor.release([Ruling(True), Ruling(False, DENIED)])
    assert [i["type"] for i in edited["output"]] == [
        "message",
        "custom_tool_call",
        "message",
        "web_search_call",
    ]


def test_responses_call_cut_short_is_judged_from_the_final_response() -> None:
    events = replies.responses_events(None, [Call.shell("rm -rf /")])
    # Drop the call's own done event: the final response is all that says it is whole.
    kept = [e for e in events if b"response.output_item.done" not in e]
    seen, out = _edit(kept)
    assert [c.name for c in seen] == ["shell"]
    final = [p for _, p in _events(out)][-1]["response"]
    assert [i["type"] for i in final["output"]] == ["message"]


# -- an upstream that states a call again, differently, or only once --


def _responses_payloads(stream: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in SSEDecoder().feed(b"".join(stream)) if e.dispatch]


def _responses_stream(payloads: list[dict[str, Any]]) -> list[bytes]:
    return _sse_all([(p["type"], p) for p in payloads])


def test_responses_final_states_the_judged_call_not_a_changed_one() -> None:
    payloads = _responses_payloads(replies.responses_events(None, [Call.shell("ls -la")]))
    final = payloads[-1]["response"]["output"][0]
    final["arguments"] = json.dumps({"command": "rm -rf /"})
    seen, out = _edit(_responses_stream(payloads))
    assert [json.loads(c.arguments) for c in seen] == [{"command": "ls -la"}]
    stated = [p for _, p in _events(out)][-1]["response"]["output"][0]
    assert json.loads(stated["arguments"]) == {"command": "ls -la"}


def test_responses_call_stated_only_in_the_final_response_is_judged() -> None:
    payloads = _responses_payloads(replies.responses_events("ok", []))
    payloads[-1]["response"]["output"].append(
        {
            "type": "function_call",
            "id": "fc_x",
            "call_id": "c",
            "name": "shell",
            "arguments": '{"command": "rm -rf /"}',
        }
    )
    seen, out = _edit(_responses_stream(payloads))
    assert [c.name for c in seen] == ["shell"]
    final = [p for _, p in _events(out)][-1]["response"]["output"]
    assert [i["type"] for i in final] == ["message", "message"]


def test_responses_call_that_appears_only_at_done_is_judged() -> None:
    payloads = _responses_payloads(replies.responses_events("ok", []))
    done = next(p for p in payloads if p["type"] == "response.output_item.done")
    done["item"] = {
        "type": "function_call",
        "id": "fc_y",
        "call_id": "c",
        "name": "shell",
        "arguments": '{"command": "rm -rf ~"}',
    }
    seen, out = _edit(_responses_stream(payloads))
    assert [c.name for c in seen] == ["shell"]
    assert b"rm -rf" not in out


def test_anthropic_nothing_more_about_a_judged_block_passes() -> None:
    stream = replies.anthropic_events(None, [Call.shell("ls")])
    late = _sse_all(
        [
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": "; rm -rf /"},
                },
            )
        ]
    )
    stream = stream[:-2] + late + stream[-2:]
    seen, out = _edit(stream)
    assert len(seen) == 1 and b"rm -rf" not in out


def test_anthropic_call_stated_in_message_start_is_judged() -> None:
    stream = replies.anthropic_events("hi", [])
    payloads = [json.loads(e.data) for e in SSEDecoder().feed(b"".join(stream)) if e.dispatch]
    payloads[0]["message"]["content"] = [
        {"type": "tool_use", "id": "toolu_z", "name": "shell", "input": {"command": "rm -rf /"}}
    ]
    seen, out = _edit(_sse_all([(p["type"], p) for p in payloads]))
    assert [c.call_id for c in seen] == ["toolu_z"]
    start = _events(out)[0][1]
    assert start["message"]["content"] == [{"type": "text", "text": DENIED}]


def test_a_call_spelled_with_escapes_is_still_judged() -> None:
    # Text events pass unread when they cannot name a call; a JSON escape can
    # spell any key, so an event with one is always read.
    stream = replies.chat_events("ok", [Call.shell("rm -rf /")])
    escaped = [e.replace(b'"tool_calls"', b'"tool\\u005fcalls"') for e in stream]
    assert any(b"tool\\u005fcalls" in e for e in escaped)
    seen, out = _edit(escaped)
    assert [c.name for c in seen] == ["shell"]
    assert b"rm -rf" not in out


def test_whole_chunks_pass_unread_only_when_nothing_can_be_a_call() -> None:
    stream = replies.chat_events("hello there", [Call.shell("rm -rf /")])
    editor = AnswerStream()
    # Before the format is known nothing passes unread.
    assert not editor.passes(stream[0])
    for event in SSEDecoder().feed(stream[0]):
        editor.feed(event)
        editor.release([])
    assert editor.passes(b"".join(stream[1:3]))  # text deltas
    assert not editor.passes(b"".join(stream[1:5]))  # the call starts in there
    assert not editor.passes(b'data: {"choices":[{"delta":{"tool\\u005fcalls":[]}}]}\n\n')
    # Responses events are always read, one by one, to count them.
    responses = AnswerStream()
    first = replies.responses_events("hi", [])
    for event in SSEDecoder().feed(first[0]):
        responses.feed(event)
        responses.release([])
    assert not responses.passes(first[1])
