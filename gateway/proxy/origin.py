"""The reverse proxy's HTTP/1.1 client: kept-alive connections to the upstreams.

aiohttp's `ClientSession` does much for each request it sends: a request
object, a payload object, a task that writes the body, a timer for every
read. Measured, that was a large share of a request's CPU, in reefgate and
in the bare aiohttp proxy alike (`bench/HISTORY.md`, twentieth sitting).
The reverse proxy sends one kind of request, whole bytes to a configured
upstream, so it sends them itself: the head and the body in one write on a
kept-alive connection, the answer parsed by llhttp (`httptools`, the
parser aiohttp itself is built on). Everything else that talks HTTP (the
forward proxy, A2A peers, the classifiers) keeps the shared `ClientSession`.

Failures are aiohttp's exception types, so that the proxy maps them as it
always has: a read timeout is `ServerTimeoutError` (a `TimeoutError`), a
connect timeout `ConnectionTimeoutError`, a refused or reset connection
`ClientOSError` or `ServerDisconnectedError`, a malformed or truncated
answer `ClientPayloadError`.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import cast

import aiohappyeyeballs
import aiohttp
import httptools
from aiohappyeyeballs import AddrInfoType
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

# Bytes buffered from an answer before the upstream is asked to wait for its reader.
_HIGH_WATER = 1 << 18
# Bytes an answer may send before its head is complete: the parser holds a
# header until its end, so an endless one would otherwise grow without bound.
HEAD_MAX = 1 << 16
# How long an idle connection is kept: shorter than the keep-alive timeouts
# servers commonly use, so a kept connection is rarely one the server closed.
KEEPALIVE_S = 15.0
# How long a host's looked-up addresses are used (aiohttp's default).
DNS_TTL_S = 300.0
# Methods whose requests carry a length even when empty, as aiohttp sends them.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# What may not appear in a request line or header: it would end the line early.
_BREAKS = str.maketrans("", "", "\r\n\0")


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a route's requests go: its base URL taken apart once, and its timeouts."""

    scheme: str
    host: str
    port: int
    # The Host header's value: the port only when it is not the scheme's own.
    authority: str
    # Prefix of every request target (the base URL's path, without a trailing slash).
    base_path: str
    connect_s: float
    read_s: float

    @classmethod
    def parse(cls, base_url: str, connect_s: float, read_s: float) -> Origin:
        url = URL(base_url, encoded=True)
        if url.scheme not in ("http", "https") or not url.raw_host or url.port is None:
            raise ValueError(f"not an http(s) URL with a host: {base_url!r}")
        return cls(
            scheme=url.scheme,
            host=url.raw_host,
            port=url.port,
            authority=url.host_port_subcomponent or url.raw_host,
            base_path=url.raw_path.rstrip("/"),
            connect_s=connect_s,
            read_s=read_s,
        )

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


def _line(text: str) -> str:
    if text.translate(_BREAKS) != text:
        raise aiohttp.ClientError("a request line or header holds a line break")
    return text


def request_head(
    origin: Origin, method: str, target: str, headers: Mapping[str, str], length: int | None
) -> bytes:
    """The request's head as sent: request line, Host, the headers, the body's length."""
    lines = [f"{_line(method)} {_line(target)} HTTP/1.1\r\nHost: {origin.authority}\r\n"]
    for name, value in headers.items():
        lines.append(f"{_line(name)}: {_line(value)}\r\n")
    if length is not None:
        lines.append(f"Content-Length: {length}\r\n")
    lines.append("\r\n")
    return "".join(lines).encode("utf-8", "surrogateescape")


class _HeadTooLarge(Exception):
    pass


class Answer:
    """An upstream's answer: status and headers, then its body as it arrives.

    The body is read through `content`, which is the answer itself: the
    reading side of aiohttp's `StreamReader` that the relay uses
    (`iter_any`, `is_eof`, `read_nowait`).
    """

    def __init__(self, connection: _Connection, head_only: bool) -> None:
        self.status = 0
        self.headers: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())
        self.content_length: int | None = None
        self._connection = connection
        self._head_only = head_only
        self._chunked = False
        self._raw: list[tuple[bytes, bytes]] = []
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._head_done = False
        self._eof = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._last_read = time.monotonic()

    @property
    def content(self) -> Answer:
        return self

    # -- reading, for the relay --

    def is_eof(self) -> bool:
        """Whether the whole body has arrived (some of it may still be buffered)."""
        return self._eof

    def read_nowait(self) -> bytes:
        """Every body byte buffered now."""
        if self._error is not None:
            raise self._error
        return self._take()

    async def read(self) -> bytes:
        """The rest of the body."""
        chunks = []
        async for chunk in self.iter_any():
            chunks.append(chunk)
        return b"".join(chunks)

    async def iter_any(self) -> AsyncIterator[bytes]:
        """The body in the pieces buffered by the time each is asked for."""
        while True:
            if self._chunks:
                yield self._take()
                continue
            if self._error is not None:
                raise self._error
            if self._eof:
                return
            await self._wait()

    def _take(self) -> bytes:
        chunks = self._chunks
        data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        if self._buffered >= _HIGH_WATER:
            self._connection.resume()
        self._buffered = 0
        return data

    async def _wait(self) -> None:
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- fed by the connection --

    def _feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered >= _HIGH_WATER:
            self._connection.pause()
        self._wake()

    def _finish(self) -> None:
        self._eof = True
        self._wake()

    def _fail(self, error: BaseException) -> None:
        if self._eof:
            return
        self._error = error
        self._wake()


class _Connection(asyncio.Protocol):
    """One kept-alive connection: an asyncio protocol that feeds llhttp."""

    def __init__(self, pool: Origins, key: tuple[str, str, int]) -> None:
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.idle_since = 0.0
        # Whether the connection can carry another request once this answer is read.
        self.reusable = False
        self._pool = pool
        self._parser = httptools.HttpResponseParser(self)
        self._answer: Answer | None = None
        self._complete = False
        self._paused = False
        self._head_bytes = self._header_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._read_s = 0.0

    # -- asyncio's protocol --

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        answer = self._answer
        if answer is None or self._complete:
            # Bytes nobody asked for: the connection's framing cannot be trusted.
            self.close()
            return
        answer._last_read = time.monotonic()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._failed(aiohttp.ClientPayloadError("upstream switched protocols"))
            return
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _HeadTooLarge):
                self._failed(aiohttp.ClientPayloadError("upstream answer head is too large"))
            else:
                self._failed(aiohttp.ClientPayloadError(f"malformed answer from upstream: {exc}"))
            return
        if not answer._head_done:
            self._head_bytes += len(data)
            if self._head_bytes > HEAD_MAX:
                self._failed(aiohttp.ClientPayloadError("upstream answer head is too large"))

    def connection_lost(self, exc: BaseException | None) -> None:
        self.reusable = False
        self._cancel_timer()
        self._pool._lost(self)
        answer = self._answer
        if answer is None or self._complete:
            return
        if not answer._head_done:
            answer._fail(aiohttp.ServerDisconnectedError())
        elif answer.content_length is None and not answer._chunked:
            # No length and not chunked: the body is delimited by the close.
            self._done()
        else:
            answer._fail(aiohttp.ClientPayloadError("upstream closed the connection mid-answer"))

    # -- llhttp's callbacks --

    def on_message_begin(self) -> None:
        if self._complete:
            # A second answer in the bytes of the first: nothing asked for it,
            # and the callbacks below leave the answer that was read alone.
            self.reusable = False

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._answer is not None and not self._complete:
            self._answer._raw.append((name, value))
            # A head that came in one read is measured here; `data_received`
            # measures one spread over several.
            self._header_bytes += len(name) + len(value)
            if self._header_bytes > HEAD_MAX:
                raise _HeadTooLarge

    def on_headers_complete(self) -> None:
        answer = self._answer
        if answer is None or self._complete:
            return
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            # An interim answer (103 Early Hints, say): the final one follows.
            answer._raw.clear()
            return
        headers: CIMultiDict[str] = CIMultiDict()
        for name, value in answer._raw:
            headers.add(
                name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape")
            )
        answer._raw.clear()
        answer.status = status
        answer.headers = CIMultiDictProxy(headers)
        length = headers.get("Content-Length")
        answer.content_length = int(length) if length is not None and length.isdigit() else None
        answer._chunked = "chunked" in headers.get("Transfer-Encoding", "").lower()
        answer._head_done = True
        answer._wake()
        if answer._head_only:
            # llhttp does not know the request was HEAD and would wait for the
            # length the head announces: the answer ends here, and so does
            # the connection.
            self.reusable = False
            self._done()

    def on_body(self, body: bytes) -> None:
        if self._answer is not None and not self._complete:
            self._answer._feed(body)

    def on_message_complete(self) -> None:
        answer = self._answer
        if answer is None or not answer._head_done or self._complete:
            return
        self.reusable = self._parser.should_keep_alive() and not answer._head_only
        self._done()

    # -- the exchange --

    def start(self, answer: Answer, data: list[bytes], read_s: float) -> None:
        assert self.transport is not None
        self._answer = answer
        self._head_bytes = self._header_bytes = 0
        self._complete = False
        self.reusable = False
        self._read_s = read_s
        self._arm(read_s)
        self.transport.writelines(data)

    def idle(self) -> None:
        # Bytes that arrive from now on belong to no request: `data_received` closes.
        self._answer = None
        self.resume()

    def finished(self) -> bool:
        return self._complete

    def pause(self) -> None:
        if not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()

    def close(self) -> None:
        self.reusable = False
        self._cancel_timer()
        if self.transport is not None:
            self.transport.close()

    def _done(self) -> None:
        self._complete = True
        self._cancel_timer()
        answer = self._answer
        assert answer is not None
        answer._finish()

    def _failed(self, error: BaseException) -> None:
        answer = self._answer
        if answer is not None:
            answer._fail(error)
        self.close()

    # One timer an answer rather than one a read: it is re-armed from the
    # last read when it fires, and a read only stamps the time.
    def _arm(self, delay: float) -> None:
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(delay, self._check_read)

    def _check_read(self) -> None:
        self._timer = None
        answer = self._answer
        if answer is None or self._complete:
            return
        left = answer._last_read + self._read_s - time.monotonic()
        if left > 0:
            self._arm(left)
            return
        self._failed(aiohttp.ServerTimeoutError(f"no data from upstream for {self._read_s} s"))

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _Sent:
    """``async with origins.request(...) as answer``: the connection goes back when done."""

    def __init__(self, pool: Origins, origin: Origin, data: list[bytes], head_only: bool) -> None:
        self._pool = pool
        self._origin = origin
        self._data = data
        self._head_only = head_only
        self._connection: _Connection | None = None

    async def __aenter__(self) -> Answer:
        origin = self._origin
        connection = await self._pool._acquire(origin)
        answer = Answer(connection, self._head_only)
        try:
            connection.start(answer, self._data, origin.read_s)
            while not answer._head_done:
                if answer._error is not None:
                    raise answer._error
                await answer._wait()
        except BaseException:
            # No head (an error, a timeout, the client gone): the connection
            # is in an unknown state and goes.
            self._pool._drop(connection)
            raise
        self._connection = connection
        return answer

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        connection = self._connection
        if connection is None:
            return
        self._connection = None
        if exc_type is None and connection.finished() and connection.reusable:
            connection.idle()
            self._pool._release(connection)
        else:
            # An answer left unread, or cut short: its connection cannot carry another.
            self._pool._drop(connection)


class Origins:
    """The kept-alive connections to every upstream, at most ``limit`` open at once."""

    def __init__(self, limit: int, ssl_context: ssl.SSLContext | None = None) -> None:
        self._limit = limit
        self._ssl = ssl_context
        # Each upstream's idle connections, oldest first (a dict for its order
        # and its O(1) removal when one is lost).
        self._idle: dict[tuple[str, str, int], dict[_Connection, None]] = {}
        self._open: set[_Connection] = set()
        # Connections being made count against the limit too.
        self._opening = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._swept = time.monotonic()
        self._dns: dict[tuple[str, int], tuple[float, list[AddrInfoType]]] = {}
        self._closed = False

    def request(
        self,
        origin: Origin,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes,
    ) -> _Sent:
        """Send ``method target`` with ``headers`` and ``body``; enter it for the answer."""
        length = len(body) if body or method in _BODY_METHODS else None
        head = request_head(origin, method, target, headers, length)
        data = [head, body] if body else [head]
        return _Sent(self, origin, data, method == "HEAD")

    async def close(self) -> None:
        self._closed = True
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(aiohttp.ClientConnectionError("the gateway is shutting down"))
        self._waiters.clear()

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            # Made on first use: the system's trust store, as aiohttp's default is.
            self._ssl = ssl.create_default_context()
        return self._ssl

    async def _acquire(self, origin: Origin) -> _Connection:
        if self._closed:
            raise aiohttp.ClientConnectionError("the gateway is shutting down")
        idle = self._idle.get(origin.key)
        now = time.monotonic()
        while idle:
            connection, _ = idle.popitem()
            transport = connection.transport
            if transport is None or transport.is_closing():
                continue
            if now - connection.idle_since > KEEPALIVE_S:
                connection.close()
                self._forget(connection)
                continue
            return connection
        while len(self._open) + self._opening >= self._limit:
            if not self._close_oldest_idle():
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                try:
                    await waiter
                except BaseException:
                    if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                        # Woken and cancelled before it ran: the turn goes to the next.
                        self._wake_one()
                    else:
                        waiter.cancel()
                    raise
                return await self._acquire(origin)
        self._opening += 1
        try:
            return await self._connect(origin)
        finally:
            self._opening -= 1

    async def _connect(self, origin: Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = origin.scheme == "https"
        connection = _Connection(self, origin.key)
        key = (origin.host, origin.port)
        try:
            async with asyncio.timeout(origin.connect_s):
                addresses = await self._addresses(key)
                # An address family that is routed nowhere (IPv6, often) must not
                # hold a connection for the whole timeout: the next address is
                # tried after 250 ms, as aiohttp does.
                sock = await aiohappyeyeballs.start_connection(
                    addresses, happy_eyeballs_delay=0.25, interleave=1
                )
                try:
                    await loop.create_connection(
                        lambda: connection,
                        sock=sock,
                        ssl=self._ssl_context() if tls else None,
                        server_hostname=origin.host if tls else None,
                    )
                except BaseException:
                    sock.close()
                    raise
        except BaseException as exc:
            # A failed connection may mean the name now points elsewhere.
            self._dns.pop(key, None)
            if isinstance(exc, TimeoutError):
                raise aiohttp.ConnectionTimeoutError(
                    f"connecting to {origin.authority} took over {origin.connect_s} s"
                ) from exc
            if isinstance(exc, ssl.SSLError):
                raise aiohttp.ClientConnectionError(
                    f"TLS with {origin.authority} failed: {exc}"
                ) from exc
            if isinstance(exc, OSError):
                raise aiohttp.ClientOSError(
                    exc.errno, f"cannot connect to {origin.authority}: {exc.strerror}"
                ) from exc
            raise
        self._open.add(connection)
        return connection

    async def _addresses(self, key: tuple[str, int]) -> list[AddrInfoType]:
        """The host's addresses, looked up at most once every `DNS_TTL_S` (aiohttp's default)."""
        now = time.monotonic()
        kept = self._dns.get(key)
        if kept is not None and kept[0] > now:
            return kept[1]
        infos = await asyncio.get_running_loop().getaddrinfo(
            key[0], key[1], type=socket.SOCK_STREAM
        )
        addresses: list[AddrInfoType] = list(infos)
        if not addresses:
            raise OSError(f"no address for {key[0]}")
        self._dns[key] = (now + DNS_TTL_S, addresses)
        return addresses

    def _close_oldest_idle(self) -> bool:
        oldest: _Connection | None = None
        for connections in self._idle.values():
            first = next(iter(connections), None)
            if first is not None and (oldest is None or first.idle_since < oldest.idle_since):
                oldest = first
        if oldest is None:
            return False
        oldest.close()
        self._forget(oldest)
        return True

    def _release(self, connection: _Connection) -> None:
        if self._closed:
            connection.close()
            return
        now = connection.idle_since = time.monotonic()
        self._idle.setdefault(connection.key, {})[connection] = None
        if now - self._swept > KEEPALIVE_S:
            self._sweep(now)
        self._wake_one()

    def _sweep(self, now: float) -> None:
        # Idle connections expire here too, not only when their upstream is
        # asked for again: one a reload left without a route is never asked for.
        self._swept = now
        for connections in self._idle.values():
            for connection in [c for c in connections if now - c.idle_since > KEEPALIVE_S]:
                connection.close()
                self._forget(connection)
        self._idle = {key: connections for key, connections in self._idle.items() if connections}

    def _drop(self, connection: _Connection) -> None:
        """Close ``connection`` and give its place to a waiting request."""
        connection.close()
        self._lost(connection)

    def _lost(self, connection: _Connection) -> None:
        if self._forget(connection):
            self._wake_one()

    def _forget(self, connection: _Connection) -> bool:
        """Whether ``connection`` was open; it is not any more, nor idle."""
        if connection not in self._open:
            return False
        self._open.discard(connection)
        idle = self._idle.get(connection.key)
        if idle is not None:
            idle.pop(connection, None)
        return True

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
