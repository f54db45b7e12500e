"""The peer message floor."""

from __future__ import annotations

from gateway.peer.precheck import INVALID_UTF8, TOO_LARGE, precheck


def test_clean_text() -> None:
    result = precheck("Can you review PR 12?")
    assert (result.allowed, result.findings, result.text) == (True, (), "Can you review PR 12?")


def test_secret_is_denied_with_its_kind() -> None:
    result = precheck("aws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE")
    assert not result.allowed
    assert result.findings == ("aws_access_key",)


def test_bytes_are_decoded_and_bom_dropped() -> None:
    result = precheck(b"\xef\xbb\xbfhello")
    assert (result.allowed, result.text) == (True, "hello")


def test_unreadable_input() -> None:
    assert precheck(b"\xff").findings == (INVALID_UTF8,)
    assert precheck("a\ud800").findings == (INVALID_UTF8,)
    assert precheck("a\ud800").text is None


def test_size_limit_in_bytes() -> None:
    assert precheck("a" * 32_768).allowed
    assert precheck("é" * 16_385).findings == (TOO_LARGE,)
    assert precheck(b"a" * 32_769).findings == (TOO_LARGE,)
