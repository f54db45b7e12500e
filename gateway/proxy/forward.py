"""The forward proxy: what an agent reaches through ``HTTPS_PROXY``.

A connection's first request decides what it becomes:

- ``CONNECT host:port`` to a host in ``forward_proxy.intercept``: the gateway
  answers 200, terminates TLS with a leaf certificate for that host from its
  own CA, and hands the decrypted connection to the same aiohttp handler,
  exchange steps and reverse proxy as the agent listener, bound to that host's
  upstream. Every request inside takes the reverse proxy's path: same checks,
  decisions, audit.
- ``CONNECT`` to any other host: with ``egress: tunnel`` and the host in
  ``forward_proxy.allow``, a byte tunnel; otherwise 403. Either way an audit
  entry (``tunnel``) says so: this is the egress control that keeps an agent
  from reaching an unknown host.
- A plain ``http://`` request (absolute form): relayed under the same egress
  rule; to an intercepted host it is refused, since its API is HTTPS.

The request head is read with h11 (sans-IO), bounded in size and time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import aiohttp
import h11
from aiohttp import web

from gateway.config.models import ForwardProxy as Settings
from gateway.guard.floor import shown
from gateway.observe.metrics import Metrics
from gateway.proxy.certs import Authority, ensure_ca
from gateway.proxy.entrance import exchange_route
from gateway.proxy.exchange import ms
from gateway.proxy.middleware import LEDGER, Ledger
from gateway.proxy.server import GatewayRunner, tunnel_protocol
from gateway.proxy.upstream import HOP_BY_HOP, response_headers

log = logging.getLogger("reefgate.forward")

# A request head larger than this, or slower than this, is refused.
MAX_HEAD_BYTES = 16 * 1024
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0
_PIPE_HIGH_WATER = 256 * 1024

ProtocolFactory = Callable[[], asyncio.Protocol]
# The tunnel counter's outcome for each category; every other category is a refusal.
_OUTCOMES = {"intercepted": "intercepted", "tunnelled": "tunnelled", "tunnel_failed": "failed"}


def host_allowed(host: str, patterns: list[str]) -> bool:
    """``host`` matches an exact pattern, or ``*.example.com`` matches a subdomain of it."""
    host = host.lower().rstrip(".")
    for pattern in patterns:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif host == pattern:
            return True
    return False


def split_authority(target: str) -> tuple[str, int] | None:
    """``host:port`` of a CONNECT target (IPv6 in brackets), or None when malformed."""
    if target.startswith("["):
        end = target.find("]")
        if end < 0 or target[end + 1 : end + 2] != ":":
            return None
        host, port = target[1:end], target[end + 2 :]
    else:
        host, _, port = target.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.lower(), int(port)


@dataclass(slots=True)
class _Decision:
    category: str  # intercepted, tunnelled, egress_denied, tunnel_failed, bad_request
    upstream: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


class ForwardProxy:
    """The listener's logic; one :class:`_Front` per accepted connection."""

    def __init__(
        self,
        settings: Settings,
        authority: Authority,
        tunnel_protocol: Callable[[str], asyncio.Protocol],
        plain_protocol: ProtocolFactory,
        ledger: Ledger,
        metrics: Metrics,
        *,
        reuse_port: bool = False,
    ) -> None:
        # Replaced by a config reload; the listener, CA and leaf settings stay.
        self.settings = settings
        # Several `serve --workers` processes listen on the same port.
        self._reuse_port = reuse_port
        self.authority = authority
        self._tunnel_protocol = tunnel_protocol
        self._plain_protocol = plain_protocol
        self._ledger = ledger
        self._metrics = metrics
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """The port listened on (the configured one, or the one the system chose for 0)."""
        assert self._server is not None
        assert self._server.sockets
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> asyncio.Server:
        loop = asyncio.get_running_loop()
        listen = self.settings.listen
        self._server = await loop.create_server(
            lambda: _Front(self),
            listen.host,
            listen.port,
            reuse_address=True,
            reuse_port=self._reuse_port or None,
            backlog=1024,
        )
        return self._server

    def stop_listening(self) -> None:
        """Accept no new connection; the open ones go on (a drain before ``close``)."""
        if self._server is not None:
            self._server.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def spawn(self, work: Any) -> None:
        # A reference is kept until the task ends (asyncio holds tasks weakly).
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def egress_allowed(self, host: str) -> bool:
        s = self.settings
        return s.egress == "tunnel" and host_allowed(host, s.allow)

    def record(self, client: str | None, host: str, port: int, decision: _Decision) -> None:
        """One audit entry per CONNECT or plain request decided here."""
        allowed = decision.category in ("intercepted", "tunnelled")
        self._metrics.count_tunnel(_OUTCOMES.get(decision.category, "refused"))
        entry: dict[str, object] = {
            "client": client,
            "host": shown(host),
            "port": port,
            "decision": "allow" if allowed else "deny",
            "category": decision.category,
            **decision.extra,
        }
        if decision.upstream is not None:
            entry["upstream"] = decision.upstream
        self._ledger.note("tunnel", entry)

    def writable(self) -> bool:
        return self._ledger.writable()

    async def connect(self, front: _Front, host: str, port: int) -> None:
        """Answer a CONNECT: intercept, tunnel or refuse."""
        upstream = self.settings.intercept.get(host)
        client = front.client
        try:
            if not self.writable():
                front.refuse(503, "reefgate cannot write its audit log")
                return
            if upstream is not None:
                self.record(client, host, port, _Decision("intercepted", upstream))
                await front.intercept(self.authority.context(host), self._tunnel_protocol(upstream))
                return
            if not self.egress_allowed(host):
                self.record(client, host, port, _Decision("egress_denied"))
                front.refuse(403, f"reefgate does not allow connections to {shown(host)}")
                return
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    await front.tunnel(host, port)
            except (OSError, TimeoutError) as exc:
                self.record(
                    client,
                    host,
                    port,
                    _Decision("tunnel_failed", extra={"error": type(exc).__name__}),
                )
                front.refuse(502, f"reefgate could not reach {shown(host)}:{port}")
                return
            self.record(client, host, port, _Decision("tunnelled"))
        except Exception as exc:
            log.warning("CONNECT to %s failed: %s", shown(host), type(exc).__name__)
            front.close()


class _Front(asyncio.Protocol):
    """A new connection until its first request head says what it is."""

    def __init__(self, proxy: ForwardProxy) -> None:
        self._proxy = proxy
        self._conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._decided = False
        self.client: str | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self._transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.client = str(peer[0]) if isinstance(peer, tuple) else None
        self._timer = asyncio.get_running_loop().call_later(HEAD_TIMEOUT_S, self.close)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def data_received(self, data: bytes) -> None:
        if self._decided:
            return
        self._buffer += data
        try:
            self._conn.receive_data(data)
            event = self._conn.next_event()
        except h11.RemoteProtocolError:
            self.refuse(400, "reefgate could not read this proxy request")
            return
        if event is h11.NEED_DATA:
            return
        if not isinstance(event, h11.Request):
            self.refuse(400, "reefgate could not read this proxy request")
            return
        self._decided = True
        self._cancel_timer()
        assert self._transport is not None
        if event.method != b"CONNECT":
            self._hand_to_plain()
            return
        authority = split_authority(event.target.decode("ascii", "replace"))
        try:
            end = self._conn.next_event()
        except h11.RemoteProtocolError:
            end = None
        if authority is None or not isinstance(end, h11.EndOfMessage):
            self.refuse(400, "a CONNECT needs host:port and no body")
            return
        if self._conn.trailing_data[0]:
            # TLS bytes sent before our answer: the handshake would start mid-stream.
            self.refuse(400, "data sent before the CONNECT was answered")
            return
        self._transport.pause_reading()
        self._proxy.spawn(self._proxy.connect(self, *authority))

    def _hand_to_plain(self) -> None:
        """An absolute-form request: the plain forwarding app reads it from the start."""
        assert self._transport is not None
        protocol = self._proxy._plain_protocol()
        self._transport.set_protocol(protocol)
        protocol.connection_made(self._transport)
        protocol.data_received(bytes(self._buffer))
        self._buffer.clear()

    def refuse(self, status: int, message: str) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        body = message.encode("utf-8") + b"\n"
        reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}.get(status, "Error")
        transport.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("ascii")
            + body
        )
        transport.close()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    async def intercept(self, context: Any, protocol: asyncio.Protocol) -> None:
        transport = self._transport
        assert transport is not None
        transport.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        loop = asyncio.get_running_loop()
        # Still paused since the CONNECT: start_tls resumes reading itself once
        # the TLS protocol is in place, so no ClientHello byte reaches _Front.
        tls = await loop.start_tls(
            transport, protocol, context, server_side=True, ssl_handshake_timeout=HEAD_TIMEOUT_S
        )
        if tls is None:
            return
        protocol.connection_made(tls)

    async def tunnel(self, host: str, port: int) -> None:
        client = self._transport
        assert client is not None
        loop = asyncio.get_running_loop()
        inner = _Pipe(client)
        remote, _ = await loop.create_connection(lambda: inner, host, port)
        outer = _Pipe(remote)
        client.set_protocol(outer)
        outer.connection_made(client)
        client.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        client.resume_reading()


class _Pipe(asyncio.Protocol):
    """Bytes from one side written to the other, with back-pressure."""

    def __init__(self, peer: asyncio.Transport) -> None:
        self._peer = peer
        self._own: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        own = cast(asyncio.Transport, transport)
        self._own = own
        own.set_write_buffer_limits(high=_PIPE_HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        self._peer.write(data)

    def eof_received(self) -> bool | None:
        if self._peer.can_write_eof():
            self._peer.write_eof()
            return True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._peer.close()

    def pause_writing(self) -> None:
        self._peer.pause_reading()

    def resume_writing(self) -> None:
        self._peer.resume_reading()


# -- plain http:// requests --


def make_plain_app(
    settings: Settings,
    session: Callable[[], aiohttp.ClientSession],
    proxy: Callable[[], ForwardProxy],
) -> web.Application:
    """The app that answers absolute-form requests: egress-checked, relayed as they are."""

    async def handle(request: web.Request) -> web.StreamResponse:
        url = request.url
        host = (url.host or "").lower()
        port = url.port or 80
        forward = proxy()
        client = request.remote
        if not url.is_absolute() or url.scheme != "http" or not host:
            return web.Response(
                status=400, text="reefgate's proxy port takes absolute http:// URLs\n"
            )
        if host in forward.settings.intercept:
            forward.record(client, host, port, _Decision("egress_denied", extra={"plain": True}))
            return web.Response(
                status=403, text=f"{shown(host)} is intercepted: use https:// through CONNECT\n"
            )
        if not forward.egress_allowed(host):
            forward.record(client, host, port, _Decision("egress_denied", extra={"plain": True}))
            return web.Response(
                status=403, text=f"reefgate does not allow requests to {shown(host)}\n"
            )
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in HOP_BY_HOP and k.lower() != "host"
        }
        started = time.perf_counter()
        try:
            async with session().request(
                request.method,
                url,
                headers=headers,
                data=request.content if request.body_exists else None,
                allow_redirects=False,
            ) as upstream:
                response = web.StreamResponse(
                    status=upstream.status, headers=response_headers(upstream.headers)
                )
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
        except (aiohttp.ClientError, TimeoutError) as exc:
            forward.record(
                client,
                host,
                port,
                _Decision("tunnel_failed", extra={"plain": True, "error": type(exc).__name__}),
            )
            return web.Response(status=502, text=f"reefgate could not reach {shown(host)}\n")
        forward.record(
            client,
            host,
            port,
            _Decision(
                "tunnelled",
                extra={"plain": True, "ms": ms(time.perf_counter() - started)},
            ),
        )
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


@asynccontextmanager
async def running(
    settings: Settings,
    *,
    handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ledger: Ledger,
    metrics: Metrics,
    session: Callable[[], aiohttp.ClientSession],
    client_max_size: int,
    expect_handler: Callable[[web.Request], Awaitable[None]],
    reuse_port: bool = False,
) -> AsyncIterator[ForwardProxy]:
    """The forward proxy listening, for as long as the context lasts.

    Inside a tunnel the connection is served by an app with the agent
    listener's exchange steps and one route to ``handle`` (the reverse proxy):
    the same pipeline, and none of the gateway's own endpoints.
    """
    authority = Authority(
        ensure_ca(settings.ca_dir),
        validity_hours=settings.leaf_validity_hours,
        cache_size=settings.leaf_cache_size,
    )
    tunnel_app = web.Application(client_max_size=client_max_size)
    tunnel_app[LEDGER] = ledger
    tunnel_app.router.add_route(
        "*",
        "/{tail:.*}",
        exchange_route(tunnel_app, handle),
        name="proxy",
        expect_handler=expect_handler,
    )
    tunnels = GatewayRunner(tunnel_app)
    await tunnels.setup()
    holder: list[ForwardProxy] = []
    plain = GatewayRunner(make_plain_app(settings, session, lambda: holder[0]))
    try:
        await plain.setup()
        assert plain.server is not None
        proxy = ForwardProxy(
            settings,
            authority,
            lambda upstream: tunnel_protocol(tunnels, upstream),
            plain.server,
            ledger,
            metrics,
            reuse_port=reuse_port,
        )
        holder.append(proxy)
        await proxy.start()
        try:
            yield proxy
        finally:
            await proxy.close()
    finally:
        await plain.cleanup()
        await tunnels.cleanup()
