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
