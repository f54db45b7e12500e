"""`Segment` as a value: compared, copied and pickled by its fields, never hashed.

It is compiled by mypyc when the extension is built and a plain slotted
class otherwise; both must behave as the dataclass it replaced did.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from gateway.wire.base import NOTHING_EXPECTED, Segment, Trust


def _segment() -> Segment:
    return Segment("messages[3].content", "tool", "a result", Trust.UNTRUSTED, 3)


def test_fields_and_defaults() -> None:
    seg = Segment("model", "request", "gpt-4o")
    assert (seg.path, seg.role, seg.text) == ("model", "request", "gpt-4o")
    assert seg.trust is Trust.TRUSTED
    assert seg.index is None
    assert seg.expected is NOTHING_EXPECTED == frozenset()
    keyed = Segment("authorization", "header", "Bearer k", expected=frozenset({"openai_key"}))
    assert keyed.expected == {"openai_key"}


def test_equal_by_value_and_unhashable() -> None:
    assert _segment() == _segment()
    assert _segment() != _segment().moved("messages[4].content", 4)
    assert _segment() != Segment("messages[3].content", "tool", "a result", Trust.TRUSTED, 3)
    assert (_segment() == "a result") is False
    with pytest.raises(TypeError):
        hash(_segment())


def test_copied_and_pickled_whole() -> None:
    seg = Segment("authorization", "header", "Bearer k", Trust.OPAQUE, None, frozenset({"k"}))
    for twin in (copy.copy(seg), copy.deepcopy(seg), pickle.loads(pickle.dumps(seg))):
        assert type(twin) is Segment
        assert twin == seg
        assert twin is not seg


def test_repr_names_every_field() -> None:
    assert repr(_segment()) == (
        "Segment(path='messages[3].content', role='tool', text='a result', "
        "trust=<Trust.UNTRUSTED: 'untrusted'>, index=3, expected=frozenset())"
    )


def test_where_and_moved() -> None:
    seg = _segment()
    assert seg.where() == "message 3 (role tool, messages[3].content)"
    moved = seg.moved("input[0]", None)
    assert moved.where() == "input[0] (role tool)"
    assert (moved.text, moved.trust, seg.path) == (
        "a result",
        Trust.UNTRUSTED,
        "messages[3].content",
    )


def test_the_guards_memo_is_not_part_of_the_value() -> None:
    """Compared, copied, pickled and shown without it; a moved segment starts without one."""
    seg = _segment()
    assert (seg.floor_owner, seg.floor_seen) == (None, None)
    seg.floor_owner, seg.floor_seen = object(), object()
    assert seg == _segment()
    assert repr(seg) == repr(_segment())
    for twin in (copy.copy(seg), copy.deepcopy(seg), pickle.loads(pickle.dumps(seg))):
        assert twin == seg
        assert (twin.floor_owner, twin.floor_seen) == (None, None)
    moved = seg.moved("input[0]", None)
    assert (moved.floor_owner, moved.floor_seen) == (None, None)
