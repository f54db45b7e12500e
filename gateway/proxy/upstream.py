"""Building the request to an upstream: URL, headers, credentials.

Pure functions over headers so they are tested without sockets.
"""

from __future__ import annotations

from typing import Final, TypeVar

from multidict import CIMultiDict, CIMultiDictProxy

from gateway.config.models import Flavor
from gateway.wire.base import Segment, Trust

K = TypeVar("K")

# RFC 9110 section 7.6.1 plus the de-facto proxy ones; never forwarded either way.
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)

# Set again by the client library for the body actually sent.
_REQUEST_DROP: Final = HOP_BY_HOP | {"host", "content-length", "expect"}
_RESPONSE_DROP: Final = HOP_BY_HOP | {"content-length"}
_CREDENTIAL_HEADERS: Final = frozenset({"authorization", "x-api-key", "api-key"})
# The agent's credentials go too when the gateway replaces them.
_REQUEST_DROP_CREDENTIALS: Final = _REQUEST_DROP | _CREDENTIAL_HEADERS
_NOTHING: Final[frozenset[str]] = frozenset()
# The gateway's own headers never pass in either direction.
_OWN_PREFIX: Final = "x-reefgate-"
# Header names shown in a finding's location; any other name the client chose
# is shown by position only.
_KNOWN_HEADERS: Final = _CREDENTIAL_HEADERS | {
    "accept",
    "content-type",
    "cookie",
    "user-agent",
    "openai-organization",
    "openai-project",
    "anthropic-version",
    "anthropic-beta",
}


# Built once: the paths of the known headers' segments.
_KNOWN_PATHS: Final = {name: f"header({name})" for name in _KNOWN_HEADERS}
_OPAQUE: Final = Trust.OPAQUE


def _connection_tokens(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> frozenset[str]:
    # Every Connection header counts: a second one names hop-by-hop headers too.
    # Joined, their tokens are the same as each one's, and an agent sends the
    # same value ("keep-alive") every time: the answer is kept by that value.
    value = ",".join(headers.getall("Connection", ()))
    tokens = _tokens_by_value.get(value)
    if tokens is None:
        tokens = frozenset(token for t in value.split(",") if (token := t.strip().lower()))
        if len(value) <= _KEPT_TOKENS_CHARS:
            if len(_tokens_by_value) >= _NAMES_KEPT:
                _tokens_by_value.clear()
            _tokens_by_value[value] = tokens
    return tokens


# How many header names (as sent, case and all) or Connection values a table
# remembers; past it, it starts over, so names a client makes up cannot grow it.
_NAMES_KEPT: Final = 1024
_KEPT_TOKENS_CHARS: Final = 256
_tokens_by_value: Final[dict[str, frozenset[str]]] = {}


class _Filter:
    """The headers a copy leaves out: a fixed set of names, and the gateway's own.

    Agents send the same few names on every request, and lowercasing a name
    costs more than looking it up, so each name's answer is remembered as
    sent. The copy takes every header and then removes the left-out ones:
    multidict copies a whole dict for less than it adds one header.
    """

    __slots__ = ("_drop", "_dropped")

    def __init__(self, drop: frozenset[str]) -> None:
        self._drop = drop
        self._dropped: dict[str, bool] = {}

    def _leaves_out(self, name: str) -> bool:
        known = self._dropped.get(name)
        if known is None:
            lower = name.lower()
            known = lower in self._drop or lower.startswith(_OWN_PREFIX)
            if len(self._dropped) >= _NAMES_KEPT:
                self._dropped.clear()
            self._dropped[name] = known
        return known

    def copy(self, headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> CIMultiDict[str]:
        """The headers less the left-out ones and those Connection names, in the order sent."""
        out = headers.copy()
        # popall is case-insensitive, as the sets of names are: each spelling
        # of a left-out name goes, and nothing else.
        if "Connection" in headers:
            for token in _connection_tokens(headers):
                out.popall(token, None)
        for name in headers:
            if self._leaves_out(name):
                out.popall(name, None)
        return out


_REQUEST: Final = _Filter(_REQUEST_DROP)
_REQUEST_NO_CREDENTIALS: Final = _Filter(_REQUEST_DROP_CREDENTIALS)
_RESPONSE: Final = _Filter(_RESPONSE_DROP)


def request_headers(
    headers: CIMultiDictProxy[str] | CIMultiDict[str], *, strip_credentials: bool
) -> CIMultiDict[str]:
    """The agent's headers as they go upstream, before key custody adds its own.

    ``strip_credentials``: the agent's credential headers must not leave,
    because the gateway replaces them (custody) or they hold a gateway-issued
    key.
    """
    return (_REQUEST_NO_CREDENTIALS if strip_credentials else _REQUEST).copy(headers)


def add_custody(headers: CIMultiDict[str], *, flavor: Flavor, custody_key: str) -> None:
    """The gateway's own provider key, in the header this provider reads."""
    if flavor == "anthropic":
        headers["x-api-key"] = custody_key
    else:
        headers["Authorization"] = f"Bearer {custody_key}"


# A header's segment, kept by its position, name and value as sent and the
# request's settings: agents send the same headers request after request, so
# one lookup replaces building the text and the segment, and the text, the
# same object each time, has its hash already when the guard's cache looks it
# up. Long values are not kept, and the table starts over when full: a client
# that varies its headers pays what every request paid before, no more.
_SEGMENTS_KEPT: Final = 4096
_KEPT_VALUE_CHARS: Final = 1024
_SKIPPED: Final = Segment("", "header", "", _OPAQUE)
_segments: Final[dict[tuple[int, str, str, frozenset[str], frozenset[str]], Segment]] = {}


def _header_segment(
    i: int, name: str, value: str, skip: frozenset[str], key_kinds: frozenset[str]
) -> Segment:
    lower = name.lower()
    if lower in skip:
        return _SKIPPED
    expected = key_kinds if lower in _CREDENTIAL_HEADERS else _NOTHING
    path = _KNOWN_PATHS.get(lower) or f"header[{i}]"
    return Segment(path, "header", f"{name}: {value}", _OPAQUE, None, expected)


def header_segments(
    headers: CIMultiDict[str], *, skip: frozenset[str], key_kinds: frozenset[str]
) -> list[Segment]:
    """Every header that goes upstream, as ``name: value`` text for the secret floor.

    The name gives the value its context (``x-my-token: ...``), as in a config
    file. The agent's own API key for this upstream in a credential header is
    expected there; another secret in it is not. The segments are shared
    between requests, so nothing may change one.
    """
    out: list[Segment] = []
    kept = _segments
    for i, (name, value) in enumerate(headers.items()):
        key = (i, name, value, skip, key_kinds)
        segment = kept.get(key)
        if segment is None:
            segment = _header_segment(i, name, value, skip, key_kinds)
            _keep(kept, key, segment, value)
        if segment is not _SKIPPED:
            out.append(segment)
    return out


# The request path's segment, kept by the path the same way.
_paths: Final[dict[str, Segment]] = {}


def path_segment(path: str) -> Segment:
    """The decoded request path, as an opaque segment for the floor; shared like a header's."""
    segment = _paths.get(path)
    if segment is None:
        segment = Segment("path", "path", path, _OPAQUE)
        _keep(_paths, path, segment, path)
    return segment


def _keep(table: dict[K, Segment], key: K, segment: Segment, value: str) -> None:
    """``segment`` kept under ``key`` unless its value is long; the table starts over when full."""
    if len(value) <= _KEPT_VALUE_CHARS:
        if len(table) >= _SEGMENTS_KEPT:
            table.clear()
        table[key] = segment


def response_headers(headers: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    return _RESPONSE.copy(headers)
