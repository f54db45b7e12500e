"""A message whose role is not a string is read like one of an unknown role, never a crash."""

from __future__ import annotations

import json

import pytest

from gateway.wire.base import Trust
from gateway.wire.body import request_segments


@pytest.mark.parametrize("role", [[1], {"a": "b"}, 7, None, True])
@pytest.mark.parametrize("content", ["hello there", [{"type": "text", "text": "hello there"}]])
def test_a_non_string_role_makes_the_text_untrusted(role: object, content: object) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": role, "content": content}]}).encode()
    segments, _ = request_segments("/v1/chat/completions", "", "application/json", body)
    [text] = [s for s in segments if s.text == "hello there"]
    assert text.trust is Trust.UNTRUSTED
    assert text.index == 0
