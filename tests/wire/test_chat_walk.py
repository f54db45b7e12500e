"""The compiled walk of a chat request's messages (`_chat.Walker`) writes what the
Python walk writes: the same segments, field for field and type for type, or
the same error, for every message list.

tests/wire/test_segments_differential.py holds whole adapters to a frozen
reference; here the two walks of `openai_chat._messages` meet directly, on
the shapes the compiled one takes and on each way a message leaves them.
"""

from __future__ import annotations

import copy
import functools
import gc
import importlib.util
import itertools
import random
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.wire import _chat, generic, openai_chat
from gateway.wire.base import PayloadError, Segment
from tests.wire.test_segments_differential import Gen


def _interpreted_base() -> types.ModuleType:
    """wire/base.py run from its source as a module of its own.

    Its Segment keeps its fields as member slots, as in an install without
    mypyc, so a walker built with it fills them in place instead of calling
    the type: the other of the walker's two ways, which a compiled build and
    CI's pass without extensions would otherwise never reach.
    """
    source = Path(openai_chat.__file__).with_name("base.py")
    spec = importlib.util.spec_from_file_location("tests.wire.interpreted_base", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TWIN = _interpreted_base()
# Built here too, so that it is tested where REEFGATE_NO_EXTENSION hides it.
WALKER = openai_chat._walker(_chat)
SLOT_WALKER = openai_chat._walker(_chat, TWIN.Segment, TWIN.NOTHING_EXPECTED)
WALKERS = {"as built": WALKER, "slot by slot": SLOT_WALKER}


def _python(messages: list[object]) -> list[Segment]:
    out: list[Segment] = []
    _python_into(messages, out)
    return out


def _compiled(messages: list[object], walker: object = WALKER) -> list[Segment]:
    out: list[Segment] = []
    _compiled_into(messages, out, walker)
    return out


def _outcome(walk: object, messages: list[object]) -> object:
    try:
        found = walk(copy.deepcopy(messages))  # type: ignore[operator]
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))
    return [
        tuple((type(v), v) for v in (s.path, s.role, s.text, s.trust, s.index, s.expected))
        for s in found
    ]


def assert_same(messages: list[object]) -> None:
    before = copy.deepcopy(messages)
    expected = _outcome(_python, messages)
    for name, walker in WALKERS.items():
        got = _outcome(functools.partial(_compiled, walker=walker), messages)
        assert got == expected, f"{name}: {messages!r:.1500}"
    assert messages == before


class Odd(str):
    """A str subclass: the compiled walk leaves it to Python."""


class OddDict(dict[str, object]):
    pass


TEXTS = ["", "hello", "{not json", '{"a": "b"}', "[1]", " lead", "\ttab", "data:,x", "dat", "é"]
ROLES = ["system", "developer", "user", "assistant", "tool", "function", "ipython", "", "USER"]


def _shapes() -> Iterator[object]:
    for role, text in itertools.product(ROLES, TEXTS):
        yield {"role": role, "content": text}
        yield {"content": text, "role": role}
    for text, call_id in itertools.product(TEXTS, ["call_1", "", "user", "assistant", "{x}"]):
        keys = [("role", "tool"), ("tool_call_id", call_id), ("content", text)]
        for order in itertools.permutations(keys):
            yield dict(order)
    yield from _tool_calling()
    yield {"role": "tool", "tool_call_id": 7, "content": "x"}
    yield {"role": "tool", "tool_call_id": "c", "content": None}
    yield {"role": "tool", "call_id": "c", "content": "x"}
    yield {"role": "assistant", "tool_call_id": "c", "content": "x"}
    yield {"role": "user", "content": "x", "name": "n"}
    yield {"role": "user"}
    yield {"role": 3, "content": "x"}
    yield {"role": "user", "content": ["part"]}
    yield {"role": "user", "content": Odd("sub")}
    yield {"role": Odd("user"), "content": "sub role"}
    yield {Odd("role"): "tool", "tool_call_id": "c", "content": "odd key"}
    yield OddDict(role="user", content="dict subclass")
    yield ["not", "a", "message"]
    yield "text"
    yield None


ARGUMENTS = ["", "{}", '{"path": "/tmp/x", "api_key": "k-1"}', "[1, 2]", "{broken", "plain"]


def _call(call_id: object, name: object, arguments: object, order: int) -> dict[str, object]:
    fn: dict[str, object] = {"name": name, "arguments": arguments}
    if order & 1:
        fn = {"arguments": arguments, "name": name}
    keys: list[tuple[str, object]] = [("id", call_id), ("type", "function"), ("function", fn)]
    if order & 2:
        keys.reverse()
    return dict(keys)


def _tool_calling() -> Iterator[object]:
    """Assistant messages with tool calls: the SDKs' shape in any key order, and near misses."""
    for content, order in itertools.product(
        [None, "", "thinking", '{"x": 1}', "data:,x"], range(4)
    ):
        calls = [_call("call_1", "read_file", '{"path": "a"}', order)]
        yield {"role": "assistant", "content": content, "tool_calls": calls}
        yield {"tool_calls": calls, "role": "assistant", "content": content}
    for call_id, name, arguments in itertools.product(
        ["call_9", "", "user", "{x"], ["f", "", "{f}", " f", "data:f"], ARGUMENTS
    ):
        calls = [_call(call_id, name, arguments, 0), _call("call_2", "g", "{}", 3)]
        yield {"role": "assistant", "content": None, "tool_calls": calls}
    good = _call("call_1", "f", "{}", 0)
    for bad in (
        {**good, "type": "custom"},
        {**good, "type": 1},
        {**good, "extra": 1},
        {"id": "c", "type": "function"},
        {**good, "id": 5},
        {**good, "function": {"name": "f"}},
        {**good, "function": {"name": "f", "arguments": {"a": 1}}},
        {**good, "function": {"name": 3, "arguments": "{}"}},
        {**good, "function": {"name": "f", "arguments": "{}", "x": 1}},
        {**good, "function": ["f"]},
        "call",
        None,
    ):
        yield {"role": "assistant", "content": "c", "tool_calls": [good, bad]}
        yield {"role": "assistant", "content": "c", "tool_calls": [bad]}
    yield {"role": "assistant", "content": "c", "tool_calls": []}
    yield {"role": "assistant", "content": "c", "tool_calls": None}
    yield {"role": "assistant", "content": "c", "tool_calls": {"id": "c"}}
    yield {"role": "assistant", "content": 3, "tool_calls": [good]}
    yield {"role": "assistant", "content": ["part"], "tool_calls": [good]}
    yield {"role": "assistant", "content": "c", "function_call": {"name": "f", "arguments": "{}"}}
    yield {"role": "assistant", "refusal": "no", "tool_calls": [good]}
    yield {"role": "user", "content": "c", "tool_calls": [good]}
    yield {"role": "assistant", "content": "c", "tool_calls": [_call("c", "f", "{}", 1)] * 5}


def test_every_shape_alone_and_together() -> None:
    shapes = list(_shapes())
    for shape in shapes:
        assert_same([shape])
        assert_same([{"role": "user", "content": "before"}, shape])
    rng = random.Random(5)
    for _ in range(300):
        assert_same([rng.choice(shapes) for _ in range(rng.randint(1, 12))])


def test_generated_conversations() -> None:
    gen = Gen(2026)
    for _ in range(1500):
        assert_same([gen.chat_message() for _ in range(gen.r.randint(0, 12))])


def test_past_the_precomputed_paths() -> None:
    messages: list[object] = []
    for i in range(openai_chat._PRECOMPUTED + 20):
        if i % 2:
            messages.append({"role": "user", "content": f"m{i}"})
        else:
            messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"r{i}"})
    assert_same(messages)


def _partial(walk: object, messages: list[object]) -> tuple[object, list[tuple[str, str]]]:
    out: list[Segment] = []
    try:
        walk(messages, out)  # type: ignore[operator]
    except Exception as exc:
        return (type(exc).__name__, str(exc)), [(s.path, s.text) for s in out]
    return None, [(s.path, s.text) for s in out]


@pytest.mark.parametrize("bound", range(16))
def test_segment_bound(monkeypatch: pytest.MonkeyPatch, bound: int) -> None:
    """Past the bound, the same error after the same segments: the caller's list keeps them."""
    messages: list[object] = [
        {"role": "user", "content": "a"},
        {"role": "tool", "content": "b", "tool_call_id": "c1"},
        {"role": "tool", "tool_call_id": "c2", "content": "d"},
        {"role": "assistant", "content": "e"},
        {
            "role": "assistant",
            "content": "f",
            "tool_calls": [_call("c3", "g", '{"h": "i"}', 0), _call("c4", "j", "k", 3)],
        },
    ]
    whole = len(_python(messages))
    monkeypatch.setattr(generic, "MAX_SEGMENTS", bound)
    assert_same(messages)
    expected = _partial(_python_into, messages)
    assert (expected[0] is None) == (bound >= whole)
    for walker in WALKERS.values():
        assert _partial(functools.partial(_compiled_into, walker=walker), messages) == expected


def _compiled_into(messages: list[object], out: list[Segment], walker: object = WALKER) -> None:
    assert walker is not None
    walker.walk(messages, out, openai_chat._message, generic.MAX_SEGMENTS)  # type: ignore[attr-defined]


def _python_into(messages: list[object], out: list[Segment]) -> None:
    saved = openai_chat._WALKER
    openai_chat._WALKER = None  # type: ignore[misc]
    try:
        openai_chat._messages(messages, out)
    finally:
        openai_chat._WALKER = saved  # type: ignore[misc]


json_text = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {"role": st.sampled_from(ROLES), "content": st.text(max_size=12) | json_text}
            ),
            st.fixed_dictionaries(
                {
                    "role": st.just("tool"),
                    "tool_call_id": st.sampled_from(["call_1", "", "user"]) | json_text,
                    "content": st.text(max_size=12),
                }
            ),
            json_text,
        ),
        max_size=8,
    )
)
def test_hypothesis(messages: list[object]) -> None:
    assert_same(messages)


def test_the_twin_is_filled_slot_by_slot() -> None:
    """What makes SLOT_WALKER walk the other way: its type's fields are member slots."""
    for name in TWIN.Segment.__slots__:
        assert type(TWIN.Segment.__dict__[name]) is types.MemberDescriptorType
    assert TWIN.Segment is not Segment
    assert TWIN.Segment("p", "user", "t") == TWIN.Segment("p", "user", "t")


@pytest.mark.parametrize(("walker", "segment"), [(WALKER, Segment), (SLOT_WALKER, TWIN.Segment)])
def test_segments_are_whole_objects(walker: object, segment: type[Segment]) -> None:
    """Built either way, a segment is still a Segment: compared, copied and freed as one."""
    out = _compiled(
        [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c", "content": "r"}],
        walker,
    )
    assert out == [
        segment("messages[0].content", "user", "hi", generic.TRUSTED, 0),
        # In the message's own key order.
        segment("messages[1].tool_call_id", "tool", "c", generic.OPAQUE, 1),
        segment("messages[1].content", "tool", "r", generic.UNTRUSTED, 1),
    ]
    assert all(type(s) is segment and s.expected == frozenset() for s in out)
    # The guard's memo starts empty, slot by slot too (unset, reading it would raise).
    assert all(s.floor_owner is None and s.floor_seen is None for s in out)
    assert copy.copy(out[0]) == out[0]
    assert copy.deepcopy(out[2]) == out[2]
    assert out[1].where() == "message 1 (role tool, messages[1].tool_call_id)"


@pytest.mark.parametrize("walker", [WALKER, SLOT_WALKER])
def test_references_are_counted(walker: object) -> None:
    text = "".join(["a text", " of its own"])
    messages: list[object] = [{"role": "user", "content": text}] * 3
    before = sys.getrefcount(text)
    out = _compiled(messages, walker)
    assert sys.getrefcount(text) == before + 3
    del out
    gc.collect()
    assert sys.getrefcount(text) == before


def test_refuses_a_type_without_the_slots() -> None:
    class Plain:
        pass

    with pytest.raises(TypeError, match="not a writable slot"):
        _chat.Walker(
            segment=Plain,
            expected=frozenset(),
            paths=(),
            content_paths=(),
            call_id_paths=(),
            trust={},
            trusted=generic.TRUSTED,
            untrusted=generic.UNTRUSTED,
            opaque=generic.OPAQUE,
            words=frozenset(),
            add_arguments=generic.add_arguments,
            depth=7,
            payload_error=PayloadError,
            heads="{",
        )
    assert WALKER is not None
    with pytest.raises(TypeError):
        WALKER.walk((), [], openai_chat._message, 10)
