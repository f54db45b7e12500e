"""Header copies to and from the upstream (gateway.proxy.upstream), without sockets."""

from __future__ import annotations

from multidict import CIMultiDict, CIMultiDictProxy

from gateway.proxy.upstream import request_headers, response_headers


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
