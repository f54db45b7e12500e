"""Header copies to and from the upstream (gateway.proxy.upstream), without sockets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from gateway.proxy import upstream
from gateway.proxy.upstream import (
    _REQUEST_DROP,
    _REQUEST_DROP_CREDENTIALS,
    _RESPONSE_DROP,
    header_segments,
    request_headers,
    response_headers,
)
from gateway.wire.base import Trust


def _proxy(*pairs: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


def test_request_headers_keep_the_agents_own_in_order() -> None:
    sent = _proxy(
        ("Host", "gw:8787"),
        ("User-Agent", "sdk/1"),
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer k"),
        ("Content-Length", "12"),
        ("Expect", "100-continue"),
        ("Accept", "a"),
        ("Accept", "b"),
        ("Transfer-Encoding", "chunked"),
        ("X-Reefgate-Decision", "allow"),
        ("x-reefgate-anything", "1"),
    )
    kept = request_headers(sent, strip_credentials=False)
    assert list(kept.items()) == [
        ("User-Agent", "sdk/1"),
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer k"),
        ("Accept", "a"),
        ("Accept", "b"),
    ]
    stripped = request_headers(sent, strip_credentials=True)
    assert "Authorization" not in stripped and stripped.getall("Accept") == ["a", "b"]


def test_credentials_in_any_header_go_when_stripped() -> None:
    sent = _proxy(("x-api-key", "k1"), ("API-Key", "k2"), ("authorization", "Bearer k3"))
    assert not request_headers(sent, strip_credentials=True)
    assert len(request_headers(sent, strip_credentials=False)) == 3


def test_headers_named_by_every_connection_header_are_dropped() -> None:
    sent = _proxy(
        ("Connection", "keep-alive, X-Hop"),
        ("Connection", " x-second ,,"),
        ("X-Hop", "1"),
        ("X-Second", "2"),
        ("X-Stays", "3"),
    )
    assert list(request_headers(sent, strip_credentials=False).items()) == [("X-Stays", "3")]
    # The drop lists themselves are not changed by one request's Connection.
    later = request_headers(_proxy(("X-Hop", "1")), strip_credentials=False)
    assert list(later.items()) == [("X-Hop", "1")]


def test_response_headers() -> None:
    got = _proxy(
        ("Content-Type", "text/event-stream"),
        ("Content-Length", "9"),
        ("Connection", "close, X-Trace"),
        ("X-Trace", "t"),
        ("Keep-Alive", "timeout=5"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("X-Reefgate-Request-Id", "forged"),
    )
    assert list(response_headers(got).items()) == [
        ("Content-Type", "text/event-stream"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
    ]


# A reference for the copies: each header by itself, its name lowered.
def _reference(headers: CIMultiDictProxy[str], drop: frozenset[str]) -> list[tuple[str, str]]:
    tokens = {t.strip().lower() for v in headers.getall("Connection", ()) for t in v.split(",")} - {
        ""
    }
    return [
        (name, value)
        for name, value in headers.items()
        if name.lower() not in drop | tokens and not name.lower().startswith("x-reefgate-")
    ]


_NAMES = st.sampled_from(
    [
        "Host",
        "HOST",
        "host",
        "Content-Length",
        "content-length",
        "Authorization",
        "AUTHORIZATION",
        "X-Api-Key",
        "api-key",
        "Accept",
        "Connection",
        "connection",
        "Keep-Alive",
        "Transfer-Encoding",
        "TE",
        "Upgrade",
        "Expect",
        "Proxy-Authorization",
        "X-Reefgate-Decision",
        "x-reefgate-request-id",
        "X-Hop",
        "x-hop",
        "X-Stays",
    ]
)
_VALUES = st.sampled_from(["1", "keep-alive", "x-hop", "X-Stays, te", "close,,", "Bearer k"])


@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=12))
def test_copies_equal_the_reference(pairs: list[tuple[str, str]]) -> None:
    sent = _proxy(*pairs)
    for strip, drop in ((False, _REQUEST_DROP), (True, _REQUEST_DROP_CREDENTIALS)):
        assert list(request_headers(sent, strip_credentials=strip).items()) == _reference(
            sent, drop
        )
    assert list(response_headers(sent).items()) == _reference(sent, _RESPONSE_DROP)


def test_a_name_is_left_out_in_any_spelling_after_another_was_remembered() -> None:
    assert not request_headers(_proxy(("host", "a")), strip_credentials=False)
    assert not request_headers(_proxy(("HoSt", "b"), ("HOST", "c")), strip_credentials=False)
    kept = request_headers(_proxy(("X-Kept", "1"), ("x-kept", "2")), strip_credentials=False)
    assert list(kept.items()) == [("X-Kept", "1"), ("x-kept", "2")]


def test_remembered_names_are_bounded() -> None:
    for i in range(upstream._NAMES_KEPT + 10):
        request_headers(_proxy((f"X-Made-Up-{i}", "1")), strip_credentials=False)
    assert len(upstream._REQUEST._dropped) <= upstream._NAMES_KEPT


_KEYS = frozenset({"openai_key"})


def _segments(
    *pairs: tuple[str, str], skip: frozenset[str] = frozenset(), kinds: frozenset[str] = _KEYS
) -> list[tuple[str, str, str, Trust, frozenset[str]]]:
    return [
        (s.path, s.role, s.text, s.trust, s.expected)
        for s in header_segments(CIMultiDict(pairs), skip=skip, key_kinds=kinds)
    ]


def test_header_segments() -> None:
    pairs = (("Authorization", "Bearer k"), ("X-Custom", "v"), ("accept", "*/*"))
    expected = [
        ("header(authorization)", "header", "Authorization: Bearer k", Trust.OPAQUE, _KEYS),
        ("header[1]", "header", "X-Custom: v", Trust.OPAQUE, frozenset()),
        ("header(accept)", "header", "accept: */*", Trust.OPAQUE, frozenset()),
    ]
    # The second time from the kept segments, the same answer.
    assert _segments(*pairs) == expected
    assert _segments(*pairs) == expected
    assert _segments(*pairs, skip=frozenset({"x-custom"})) == [expected[0], expected[2]]
    assert _segments(*pairs, kinds=frozenset())[0][4] == frozenset()
    # Another value, position or spelling is another segment.
    assert _segments(("Authorization", "Bearer j"))[0][2] == "Authorization: Bearer j"
    assert _segments(("A", "1"), ("X-Custom", "v"))[1][0] == "header[1]"
    assert _segments(("X-Custom", "v"), ("A", "1"))[0][0] == "header[0]"
    assert _segments(("AUTHORIZATION", "Bearer k"))[0][2] == "AUTHORIZATION: Bearer k"


def test_long_header_values_are_not_kept_and_the_table_is_bounded() -> None:
    long = "v" * (upstream._KEPT_VALUE_CHARS + 1)
    upstream._segments.clear()
    assert _segments(("X-Long", long))[0][2] == f"X-Long: {long}"
    assert not upstream._segments
    for i in range(upstream._SEGMENTS_KEPT + 10):
        _segments(("X-Trace", str(i)))
    assert 0 < len(upstream._segments) <= upstream._SEGMENTS_KEPT


def test_connection_values_are_remembered_within_bounds() -> None:
    upstream._tokens_by_value.clear()
    for i in range(upstream._NAMES_KEPT + 10):
        sent = _proxy(("Connection", f"x-hop-{i}"), (f"X-Hop-{i}", "1"), ("X-Stays", "1"))
        assert list(request_headers(sent, strip_credentials=False).items()) == [("X-Stays", "1")]
    assert 0 < len(upstream._tokens_by_value) <= upstream._NAMES_KEPT
    long = "x-hop, " + "y" * upstream._KEPT_TOKENS_CHARS
    sent = _proxy(("Connection", long), ("X-Hop", "1"), ("X-Stays", "1"))
    assert list(request_headers(sent, strip_credentials=False).items()) == [("X-Stays", "1")]
    assert long not in upstream._tokens_by_value
