"""Building the request to an upstream: URL, headers, credentials.

Pure functions over headers so they are tested without sockets.
"""

from __future__ import annotations

from multidict import CIMultiDict, CIMultiDictProxy

from gateway.config.models import Flavor
from gateway.wire.base import Segment, Trust

# RFC 9110 section 7.6.1 plus the de-facto proxy ones; never forwarded either way.
HOP_BY_HOP = frozenset(
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
_REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "expect"}
_RESPONSE_DROP = HOP_BY_HOP | {"content-length"}
_CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})
# The agent's credentials go too when the gateway replaces them.
_REQUEST_DROP_CREDENTIALS = _REQUEST_DROP | _CREDENTIAL_HEADERS
_NOTHING: frozenset[str] = frozenset()
# The gateway's own headers never pass in either direction.
_OWN_PREFIX = "x-reefgate-"
# Header names shown in a finding's location; any other name the client chose
# is shown by position only.
_KNOWN_HEADERS = _CREDENTIAL_HEADERS | {
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
_KNOWN_PATHS = {name: f"header({name})" for name in _KNOWN_HEADERS}
_OPAQUE = Trust.OPAQUE


def _connection_tokens(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> frozenset[str]:
    # Every Connection header counts: a second one names hop-by-hop headers too.
    values = headers.getall("Connection", ())
    return frozenset(
        token for value in values for t in value.split(",") if (token := t.strip().lower())
    )


def _copy(
    headers: CIMultiDictProxy[str] | CIMultiDict[str], drop: frozenset[str]
) -> CIMultiDict[str]:
    """The headers less `drop`, the ones Connection names and the gateway's own, in one pass."""
    if "Connection" in headers:
        drop = drop | _connection_tokens(headers)
    out: CIMultiDict[str] = CIMultiDict()
    add = out.add
    for name, value in headers.items():
        lower = name.lower()
        if lower in drop or lower.startswith(_OWN_PREFIX):
            continue
        add(name, value)
    return out


def request_headers(
    headers: CIMultiDictProxy[str] | CIMultiDict[str], *, strip_credentials: bool
) -> CIMultiDict[str]:
    """The agent's headers as they go upstream, before key custody adds its own.

    ``strip_credentials``: the agent's credential headers must not leave,
    because the gateway replaces them (custody) or they hold a gateway-issued
    key.
    """
    return _copy(headers, _REQUEST_DROP_CREDENTIALS if strip_credentials else _REQUEST_DROP)


def add_custody(headers: CIMultiDict[str], *, flavor: Flavor, custody_key: str) -> None:
    """The gateway's own provider key, in the header this provider reads."""
    if flavor == "anthropic":
        headers["x-api-key"] = custody_key
    else:
        headers["Authorization"] = f"Bearer {custody_key}"


def header_segments(
    headers: CIMultiDict[str], *, skip: frozenset[str], key_kinds: frozenset[str]
) -> list[Segment]:
    """Every header that goes upstream, as ``name: value`` text for the secret floor.

    The name gives the value its context (``x-my-token: ...``), as in a config
    file. The agent's own API key for this upstream in a credential header is
    expected there; another secret in it is not.
    """
    out: list[Segment] = []
    append = out.append
    for i, (name, value) in enumerate(headers.items()):
        lower = name.lower()
        if lower in skip:
            continue
        expected = key_kinds if lower in _CREDENTIAL_HEADERS else _NOTHING
        path = _KNOWN_PATHS.get(lower) or f"header[{i}]"
        append(Segment(path, "header", f"{name}: {value}", _OPAQUE, None, expected))
    return out


def response_headers(headers: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    return _copy(headers, _RESPONSE_DROP)
