"""Signed device requests: how a claw authenticates to its relay.

A request carries ``x-reef-handle``, ``x-reef-ts`` and ``x-reef-sig`` (or the
query parameters ``handle``, ``ts`` and ``sig``): an Ed25519 signature,
base64url, over the canonical JSON of ``{method, path, ts, bodySha256}``.

The signed ``path`` is the URL's pathname as the WHATWG URL parser leaves it
(percent-encoding kept, dot segments resolved) plus ``?`` and the query as
``URLSearchParams`` re-serialises it, without ``sig``, ``ts`` and ``handle``.
Both sides derive it from the URL, so a client never signs one spelling and
sends another.

The relay side (`RelayVerifier`) answers 401 ``invalid_device_signature`` for
any failure and 409 ``replayed_request`` for a repeat of (handle, ts, first 24
signature characters) within 600 s. The client side (`DeviceRequestSigner`)
makes timestamps strictly increasing, so two identical requests in one second
are not signed identically (Ed25519 is deterministic) and refused as a replay.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes, urlsplit

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gateway.canonical import canonical_bytes
from gateway.peer.encoding import MAX_SAFE_INTEGER, b64url_decode, b64url_encode, js_int
from gateway.peer.errors import InvalidInput
from gateway.peer.identity import is_handle, verify_ed25519

__all__ = [
    "MAX_SIGNATURE_CHARS",
    "REPLAY_WINDOW_S",
    "SKEW_S",
    "DeviceRequestSigner",
    "RelayVerdict",
    "RelayVerifier",
    "SignedRequest",
    "sign_device_request",
    "signed_message",
    "signed_path",
]

Clock = Callable[[], float]

SKEW_S = 300
REPLAY_WINDOW_S = 600
MAX_SIGNATURE_CHARS = 128
# The replay key keeps this much of the signature: enough to tell requests apart.
_REPLAY_SIG_CHARS = 24
_AUTH_PARAMS = frozenset({"sig", "ts", "handle"})

_METHOD = re.compile(r"[A-Z]+")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_TS = re.compile(r"[0-9]{1,16}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_INPUT_ERROR = "invalid device request signature input"


def signed_message(*, method: str, path: str, ts: int, body_sha256: str) -> bytes:
    """Canonical ``{bodySha256, method, path, ts}`` (keys sorted), the signed bytes."""
    return canonical_bytes({"method": method, "path": path, "ts": ts, "bodySha256": body_sha256})


def sign_device_request(
    key: Ed25519PrivateKey, *, method: str, path: str, ts: int, body_sha256: str
) -> str:
    number = js_int(ts)
    if (
        not isinstance(method, str)
        or _METHOD.fullmatch(method) is None
        or not isinstance(path, str)
        or not path.startswith("/")
        or number is None
        or not 0 <= number <= MAX_SAFE_INTEGER
        or not isinstance(body_sha256, str)
        or _HEX64.fullmatch(body_sha256) is None
    ):
        raise InvalidInput(_INPUT_ERROR)
    message = signed_message(method=method, path=path, ts=number, body_sha256=body_sha256)
    return b64url_encode(key.sign(message))


# ---------------------------------------------------------------------------
# The signed path


def signed_path(url: str) -> str:
    """The path a request to ``url`` (absolute, or an origin-form target) is signed over."""
    path, query = _split(url)
    pairs = [(k, v) for k, v in _parse_query(query) if k not in _AUTH_PARAMS]
    serialised = "&".join(f"{_form_encode(k)}={_form_encode(v)}" for k, v in pairs)
    return f"{path}?{serialised}" if serialised else path


def _split(url: str) -> tuple[str, str]:
    # The URL parser drops tabs and newlines anywhere, and C0 controls and
    # spaces at either end.
    url = url.replace("\t", "").replace("\n", "").replace("\r", "").strip(_C0_SPACE)
    if _SCHEME.match(url):
        parts = urlsplit(url)
        return _pathname(parts.path), parts.query
    url = url.partition("#")[0]
    path, _, query = url.partition("?")
    return _pathname(path), query


_C0_SPACE = "".join(chr(c) for c in range(0x21))
# What the URL parser percent-encodes in a path: C0 controls, space, and
# " # < > ? ` { } and everything above ~ (as UTF-8).
_PATH_KEEP = frozenset(chr(c) for c in range(0x21, 0x7F)) - set('"#<>?`{}')
_SINGLE_DOT = frozenset({".", "%2e"})
_DOUBLE_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})


def _pathname(path: str) -> str:
    """``URL.pathname`` for an http(s) URL with this path."""
    segments: list[str] = []
    # For http(s) a backslash is a slash.
    path = path.replace("\\", "/")
    raw = path.split("/")
    if path.startswith("/"):
        raw = raw[1:]
    for i, segment in enumerate(raw):
        last = i == len(raw) - 1
        lowered = segment.lower()
        if lowered in _DOUBLE_DOT:
            if segments:
                segments.pop()
            if last:
                segments.append("")
        elif lowered in _SINGLE_DOT:
            if last:
                segments.append("")
        else:
            segments.append("".join(_path_char(c) for c in segment))
    return "/" + "/".join(segments)


def _path_char(c: str) -> str:
    if c in _PATH_KEEP:
        return c
    return "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))


def _parse_query(query: str) -> list[tuple[str, str]]:
    """application/x-www-form-urlencoded parsing, as ``URLSearchParams``."""
    pairs: list[tuple[str, str]] = []
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append((_form_decode(name), _form_decode(value)))
    return pairs


def _form_decode(text: str) -> str:
    raw = unquote_to_bytes(text.replace("+", " ").encode("utf-8", "surrogatepass"))
    return raw.decode("utf-8", "replace")


_FORM_KEEP = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789*-._")


def _form_encode(text: str) -> str:
    out: list[str] = []
    for byte in text.encode("utf-8", "replace"):
        if byte in _FORM_KEEP:
            out.append(chr(byte))
        elif byte == 0x20:
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


# ---------------------------------------------------------------------------
# Client side


@dataclass(frozen=True, slots=True)
class SignedRequest:
    path: str
    ts: int
    signature: str
    headers: dict[str, str]


class DeviceRequestSigner:
    """Signs a claw's relay requests, with strictly increasing timestamps."""

    def __init__(self, handle: str, key: Ed25519PrivateKey, *, clock: Clock = time.time) -> None:
        if not is_handle(handle):
            raise InvalidInput("invalid handle")
        self.handle = handle
        self._key = key
        self._clock = clock
        self._last = -1

    def sign(self, method: str, url: str, body: bytes = b"") -> SignedRequest:
        now = int(self._clock())
        ts = max(now, self._last + 1)
        if ts > now + SKEW_S:
            # The relay would refuse it; more than one request per second for
            # five minutes is not a pace a claw keeps.
            raise InvalidInput("device requests outpace the relay's clock window")
        path = signed_path(url)
        signature = sign_device_request(
            self._key, method=method, path=path, ts=ts, body_sha256=hashlib.sha256(body).hexdigest()
        )
        self._last = ts
        headers = {"x-reef-handle": self.handle, "x-reef-ts": str(ts), "x-reef-sig": signature}
        return SignedRequest(path, ts, signature, headers)


# ---------------------------------------------------------------------------
# Relay side


@dataclass(frozen=True, slots=True)
class RelayVerdict:
    status: int  # 200: go on to the route; 401 or 409: refuse with `error`
    error: str | None = None
    handle: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200


UNAUTHORIZED = RelayVerdict(401, "invalid_device_signature")
REPLAYED = RelayVerdict(409, "replayed_request")
KeyLookup = Callable[[str], Ed25519PublicKey | None]


class RelayVerifier:
    """The relay's check of a device request; remembers signatures for the replay window."""

    def __init__(self, keys: KeyLookup, *, clock: Clock = time.time) -> None:
        self._keys = keys
        self._clock = clock
        self._seen: OrderedDict[tuple[str, int, str], float] = OrderedDict()

    def verify(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> RelayVerdict:
        now = self._clock()
        lowered = {k.lower(): v for k, v in headers.items()}
        query: dict[str, str] = {}
        for name, value in _parse_query(_split(url)[1]):
            query.setdefault(name, value)  # URLSearchParams.get: the first one

        def field(name: str) -> str | None:
            return lowered.get(f"x-reef-{name}", query.get(name))

        handle, ts_text, sig = (field("handle") or "").lower(), field("ts") or "", field("sig")
        if not is_handle(handle) or _TS.fullmatch(ts_text) is None or sig is None:
            return UNAUTHORIZED
        ts = int(ts_text)
        if abs(now - ts) > SKEW_S or len(sig) > MAX_SIGNATURE_CHARS:
            return UNAUTHORIZED
        key = self._keys(handle)
        signature = b64url_decode(sig)
        if key is None or signature is None or len(signature) != 64:
            return UNAUTHORIZED
        message = signed_message(
            method=method,
            path=signed_path(url),
            ts=ts,
            body_sha256=hashlib.sha256(body).hexdigest(),
        )
        if not verify_ed25519(key, signature, message):
            return UNAUTHORIZED
        self._forget(now)
        seen_key = (handle, ts, sig[:_REPLAY_SIG_CHARS])
        if seen_key in self._seen:
            return REPLAYED
        self._seen[seen_key] = now
        return RelayVerdict(200, None, handle)

    def _forget(self, now: float) -> None:
        # Insertion order is time order (the clock is not expected to go back;
        # if it does, entries only live longer).
        while self._seen:
            first = next(iter(self._seen.values()))
            if now - first < REPLAY_WINDOW_S:
                break
            self._seen.popitem(last=False)
