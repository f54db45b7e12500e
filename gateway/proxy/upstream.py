"""Building the request to an upstream: URL, headers, credentials.

Pure functions over headers so they are tested without sockets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from multidict import CIMultiDict, CIMultiDictProxy

from gateway.config.models import Flavor

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
_CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key")


def _connection_tokens(headers: Mapping[str, str]) -> set[str]:
    value = headers.get("Connection")
    if not value:
        return set()
    return {t.strip().lower() for t in value.split(",") if t.strip()}


def _copy(
    headers: CIMultiDictProxy[str] | CIMultiDict[str], drop: Iterable[str]
) -> CIMultiDict[str]:
    dropped = set(drop) | _connection_tokens(headers)
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        lower = name.lower()
        if lower in dropped or lower.startswith("x-reefgate-"):
            continue
        out.add(name, value)
    return out


def request_headers(
    headers: CIMultiDictProxy[str] | CIMultiDict[str],
    *,
    flavor: Flavor,
    custody_key: str | None,
    strip_credentials: bool,
) -> CIMultiDict[str]:
    """Headers for the upstream request.

    With custody the gateway's own provider key replaces whatever the agent
    sent. A gateway-issued key is always stripped: it must never leave.
    """
    drop = set(_REQUEST_DROP)
    if custody_key is not None or strip_credentials:
        drop.update(_CREDENTIAL_HEADERS)
    out = _copy(headers, drop)
    if custody_key is not None:
        if flavor == "anthropic":
            out["x-api-key"] = custody_key
        else:
            out["Authorization"] = f"Bearer {custody_key}"
    return out


def response_headers(headers: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    return _copy(headers, _RESPONSE_DROP)
