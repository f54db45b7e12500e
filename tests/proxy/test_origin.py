"""The reverse proxy's own HTTP/1.1 client (`gateway.proxy.origin`), against raw loopback servers.

Each server here is an asyncio stream server whose handler writes exactly the
bytes a case needs, so framing, timeouts and connection reuse are seen as
the upstream would see them.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import uvloop

from gateway.proxy.certs import Authority, init_ca
from gateway.proxy.origin import Origin, Origins

Handler = Callable[["Server", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


class Server:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.open = 0
        self.most_open = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            await self.handler(self, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open -= 1
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bool:
        """One request's head and body; False at the end of the connection."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        self.heads.append(head)
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        self.bodies.append(await reader.readexactly(length))
        return True


@asynccontextmanager
async def serving(
    handler: Handler, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[Server, int]]:
    server = Server(handler)
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0, ssl=tls)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield server, port
    finally:
        listener.close()


def origin(
    port: int, *, read_s: float = 5.0, scheme: str = "http", host: str = "127.0.0.1"
) -> Origin:
    return Origin.parse(f"{scheme}://{host}:{port}/base", 2.0, read_s)


def answering(*answers: bytes) -> Handler:
    """Answers a connection's requests with ``answers`` in turn, then waits for its close."""

    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        for answer in answers:
            if not await server.read_request(reader):
                return
            writer.write(answer)
            await writer.drain()
        await reader.read()

    return handler


def serving_answers(*answers: bytes) -> AbstractAsyncContextManager[tuple[Server, int]]:
    return serving(answering(*answers))


async def test_requests_reuse_one_kept_alive_connection_and_send_the_head_as_built() -> None:
    pool = Origins(10)
    async with serving_answers(OK, OK) as (server, port):
        target = origin(port)
        for _ in range(2):
            async with pool.request(
                target, "POST", "/base/v1/chat?x=1", {"Authorization": "Bearer k"}, b"hello"
            ) as answer:
                assert answer.status == 200
                assert answer.headers["Content-Type"] == "application/json"
                assert answer.content_length == 2
                assert await answer.read() == b"{}"
        assert server.connections == 1
        assert server.heads[0] == (
            b"POST /base/v1/chat?x=1 HTTP/1.1\r\n"
            + f"Host: 127.0.0.1:{port}\r\n".encode()
            + b"Authorization: Bearer k\r\nContent-Length: 5\r\n\r\n"
        )
        assert server.bodies == [b"hello", b"hello"]
    await pool.close()


async def test_an_empty_post_says_its_length_and_a_get_says_none() -> None:
    pool = Origins(10)
    async with serving_answers(OK, OK) as (server, port):
        for method in ("POST", "GET"):
            async with pool.request(origin(port), method, "/x", {}, b"") as answer:
                await answer.read()
        assert b"Content-Length: 0\r\n" in server.heads[0]
        assert b"Content-Length" not in server.heads[1]
    await pool.close()


async def test_a_chunked_answer_arrives_decoded_piece_by_piece() -> None:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )

    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head)
        for event in (b"data: 1\n\n", b"data: 2\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await asyncio.sleep(0.02)
        writer.write(b"0\r\n\r\n")
        await reader.read()

    pool = Origins(10)
    async with (
        serving(handler) as (_, port),
        pool.request(origin(port), "GET", "/s", {}, b"") as answer,
    ):
        assert answer.content_length is None
        pieces = [piece async for piece in answer.content.iter_any()]
    assert b"".join(pieces) == b"data: 1\n\ndata: 2\n\n"
    assert len(pieces) == 2
    await pool.close()


async def test_an_answer_without_length_ends_with_the_connection() -> None:
    pool = Origins(10)
    answer_bytes = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it"

    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer_bytes)
        await writer.drain()

    async with serving(handler) as (server, port):
        for _ in range(2):
            async with pool.request(origin(port), "GET", "/", {}, b"") as answer:
                assert await answer.read() == b"all of it"
        assert server.connections == 2
    await pool.close()


@pytest.mark.parametrize(
    ("written", "error"),
    [
        pytest.param(b"", aiohttp.ServerDisconnectedError, id="closed-before-the-head"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Len", aiohttp.ServerDisconnectedError, id="half-a-head"
        ),
        pytest.param(b"NOT HTTP AT ALL\r\n\r\n", aiohttp.ClientPayloadError, id="malformed"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            aiohttp.ClientPayloadError,
            id="two-lengths",
        ),
        pytest.param(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: upgrade\r\n\r\n",
            aiohttp.ClientPayloadError,
            id="switched-protocols",
        ),
    ],
)
async def test_an_answer_without_a_usable_head_fails_as_aiohttp_would(
    written: bytes, error: type[Exception]
) -> None:
    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(written)
        await writer.drain()

    pool = Origins(10)
    async with serving(handler) as (_, port):
        with pytest.raises(error):
            async with pool.request(origin(port), "GET", "/", {}, b""):
                pass
    await pool.close()


async def test_a_truncated_body_fails_the_read_and_the_connection_goes() -> None:
    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
        await writer.drain()

    pool = Origins(10)
    async with (
        serving(handler) as (_, port),
        pool.request(origin(port), "GET", "/", {}, b"") as answer,
    ):
        with pytest.raises(aiohttp.ClientPayloadError):
            await answer.read()
    assert pool._open == set()
    await pool.close()


async def test_a_silent_upstream_times_out_and_one_that_trickles_does_not() -> None:
    async def silent(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read()

    pool = Origins(10)
    async with serving(silent) as (_, port):
        with pytest.raises(aiohttp.ServerTimeoutError) as caught:
            async with pool.request(origin(port, read_s=0.2), "GET", "/", {}, b""):
                pass
        assert isinstance(caught.value, TimeoutError)

    async def trickle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n")
        for byte in b"abcdef":
            await asyncio.sleep(0.08)
            writer.write(bytes([byte]))
            await writer.drain()
        await reader.read()

    # Each gap is under the read timeout; the whole answer takes more than twice it.
    async with (
        serving(trickle) as (_, port),
        pool.request(origin(port, read_s=0.2), "GET", "/", {}, b"") as answer,
    ):
        assert await answer.read() == b"abcdef"
    await pool.close()


async def test_a_refused_connection_is_a_client_os_error() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    pool = Origins(10)
    with pytest.raises(aiohttp.ClientOSError):
        async with pool.request(origin(port), "GET", "/", {}, b""):
            pass
    await pool.close()


@pytest.mark.parametrize(
    ("target", "headers"),
    [
        pytest.param("/a\r\nX-Injected: 1", {}, id="target"),
        pytest.param("/", {"X-Key": "v\r\nX-Injected: 1"}, id="value"),
        pytest.param("/", {"X-Key\n": "v"}, id="name"),
        pytest.param("/", {"X-Key": "v\0"}, id="nul"),
    ],
)
async def test_a_line_break_in_the_head_is_refused_before_anything_is_sent(
    target: str, headers: dict[str, str]
) -> None:
    pool = Origins(10)
    async with serving_answers(OK) as (server, port):
        with pytest.raises(aiohttp.ClientError):
            async with pool.request(origin(port), "GET", target, headers, b""):
                pass
        assert server.connections == 0
    await pool.close()


async def test_a_head_answer_ends_at_its_head_and_its_connection_is_not_kept() -> None:
    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while await server.read_request(reader):
            if server.heads[-1].startswith(b"HEAD "):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n")
            else:
                writer.write(OK)
            await writer.drain()

    pool = Origins(10)
    async with serving(handler) as (server, port):
        async with pool.request(origin(port), "HEAD", "/", {}, b"") as answer:
            assert answer.content_length == 1234
            assert await answer.read() == b""
        async with pool.request(origin(port), "GET", "/", {}, b"") as answer:
            assert await answer.read() == b"{}"
        assert server.connections == 2
    await pool.close()


async def test_an_interim_answer_is_passed_over() -> None:
    early = b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
    pool = Origins(10)
    async with (
        serving_answers(early + OK) as (_, port),
        pool.request(origin(port), "GET", "/", {}, b"") as answer,
    ):
        assert answer.status == 200
        assert "Link" not in answer.headers
        assert await answer.read() == b"{}"
    await pool.close()


async def test_an_answer_left_unread_closes_its_connection() -> None:
    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        first = server.connections == 1
        while await server.read_request(reader):
            if first:
                # A head and part of its body; the rest never comes.
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + b"x" * 1000)
            else:
                writer.write(OK)
            await writer.drain()

    pool = Origins(10)
    async with serving(handler) as (server, port):
        async with pool.request(origin(port), "GET", "/", {}, b"") as answer:
            assert answer.status == 200
        async with pool.request(origin(port), "GET", "/", {}, b"") as answer:
            assert await answer.read() == b"{}"
        assert server.connections == 2
    await pool.close()


async def test_a_large_answer_read_slowly_arrives_whole() -> None:
    body = bytes(range(256)) * 8192  # 2 MiB, past the buffer's high-water mark
    pool = Origins(10)
    async with serving_answers(
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body, OK
    ) as (server, port):
        got = bytearray()
        async with pool.request(origin(port), "GET", "/", {}, b"") as answer:
            async for piece in answer.content.iter_any():
                got += piece
                await asyncio.sleep(0.001)
        assert bytes(got) == body
        # Paused and resumed, the connection is still good for the next request.
        async with pool.request(origin(port), "GET", "/", {}, b"") as answer:
            assert await answer.read() == b"{}"
        assert server.connections == 1
    await pool.close()


async def test_the_connection_limit_makes_requests_wait_their_turn() -> None:
    async def slow(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while await server.read_request(reader):
            await asyncio.sleep(0.05)
            writer.write(OK)
            await writer.drain()

    pool = Origins(2)
    async with serving(slow) as (server, port):

        async def one() -> bytes:
            async with pool.request(origin(port), "POST", "/", {}, b"x") as answer:
                return await answer.read()

        results = await asyncio.gather(*(one() for _ in range(6)))
        assert results == [b"{}"] * 6
        assert server.most_open <= 2
        assert server.connections == 2
    await pool.close()


async def test_https_upstreams_are_verified_against_the_trust_store(tmp_path: Path) -> None:
    files = init_ca(tmp_path)
    authority = Authority(files)

    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(OK)
        await writer.drain()
        await reader.read()

    async with serving(handler, tls=authority.context("localhost")) as (_, port):
        trusting = Origins(10, ssl.create_default_context(cafile=str(files.cert)))
        named = origin(port, scheme="https", host="localhost")
        async with trusting.request(named, "GET", "/", {}, b"") as answer:
            assert await answer.read() == b"{}"
        # The certificate names localhost, not the address.
        with pytest.raises(aiohttp.ClientError):
            async with trusting.request(origin(port, scheme="https"), "GET", "/", {}, b""):
                pass
        await trusting.close()
        # A CA the trust store does not hold.
        untrusting = Origins(10, ssl.create_default_context())
        with pytest.raises(aiohttp.ClientError):
            async with untrusting.request(named, "GET", "/", {}, b""):
                pass
        await untrusting.close()


# The gateway serves on uvloop, whose transports are its own classes: the
# cases that move bytes run there too.
_ON_UVLOOP = [
    test_requests_reuse_one_kept_alive_connection_and_send_the_head_as_built,
    test_a_chunked_answer_arrives_decoded_piece_by_piece,
    test_an_answer_without_length_ends_with_the_connection,
    test_a_truncated_body_fails_the_read_and_the_connection_goes,
    test_a_silent_upstream_times_out_and_one_that_trickles_does_not,
    test_a_refused_connection_is_a_client_os_error,
    test_a_head_answer_ends_at_its_head_and_its_connection_is_not_kept,
    test_an_answer_left_unread_closes_its_connection,
    test_a_large_answer_read_slowly_arrives_whole,
    test_the_connection_limit_makes_requests_wait_their_turn,
]


@pytest.mark.parametrize("case", _ON_UVLOOP, ids=lambda case: case.__name__.removeprefix("test_"))
def test_on_uvloop(case: Callable[[], Coroutine[Any, Any, None]]) -> None:
    uvloop.run(case())


def test_https_on_uvloop(tmp_path: Path) -> None:
    uvloop.run(test_https_upstreams_are_verified_against_the_trust_store(tmp_path))


async def test_an_endless_head_is_cut_off() -> None:
    async def handler(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-Long: ")
        for _ in range(200):
            writer.write(b"a" * 1024)
            await writer.drain()
        await reader.read()

    pool = Origins(10)
    async with serving(handler) as (_, port):
        with pytest.raises(aiohttp.ClientPayloadError, match="head is too large"):
            async with pool.request(origin(port), "GET", "/", {}, b""):
                pass
    assert pool._open == set()
    await pool.close()


async def test_a_second_answer_in_the_first_ones_bytes_changes_nothing_read() -> None:
    other = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nno"
    pool = Origins(10)
    async with serving_answers(OK + other, OK + other) as (server, port):
        for _ in range(2):
            async with pool.request(origin(port), "GET", "/", {}, b"") as answer:
                await asyncio.sleep(0.05)  # the stray answer has arrived by now
                assert (answer.status, answer.headers["Content-Type"]) == (200, "application/json")
                assert await answer.read() == b"{}"
        # The connection that carried a stray answer was not used again.
        assert server.connections == 2
    await pool.close()


async def test_a_head_too_large_in_one_read_is_refused_too() -> None:
    pool = Origins(10)
    big = b"HTTP/1.1 200 OK\r\n" + b"X-Big: " + b"a" * 70_000 + b"\r\nContent-Length: 2\r\n\r\n{}"
    async with serving_answers(big) as (_, port):
        with pytest.raises(aiohttp.ClientPayloadError, match="head is too large"):
            async with pool.request(origin(port), "GET", "/", {}, b""):
                pass
    await pool.close()


def _counting_lookups(
    monkeypatch: pytest.MonkeyPatch, addresses: list[tuple[str, int]] | None = None
) -> list[str]:
    """Counts the running loop's name lookups; with ``addresses``, answers with those."""
    loop = asyncio.get_running_loop()
    lookup = loop.getaddrinfo
    asked: list[str] = []

    async def counted(host: str, port: int, **kwargs: Any) -> Any:
        asked.append(host)
        if addresses is None:
            return await lookup(host, port, **kwargs)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address)
            for address in addresses
        ]

    monkeypatch.setattr(loop, "getaddrinfo", counted)
    return asked


async def test_a_hosts_addresses_are_looked_up_once_and_again_after_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _counting_lookups(monkeypatch)
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    pool = Origins(10)
    async with serving_answers(closing) as (server, port):
        for _ in range(3):
            async with pool.request(origin(port, host="localhost"), "GET", "/", {}, b"") as answer:
                assert await answer.read() == b"{}"
        assert server.connections == 3
    assert asked == ["localhost"]
    # Nothing listens there now. The first attempt uses the kept addresses
    # and its failure forgets them: the next one looks them up again.
    for _ in range(2):
        with pytest.raises(aiohttp.ClientOSError):
            async with pool.request(origin(port, host="localhost"), "GET", "/", {}, b""):
                pass
    assert asked == ["localhost"] * 2
    await pool.close()


async def test_an_address_that_refuses_gives_way_to_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = Origins(10)
    async with serving_answers(OK) as (server, port):
        # 127.0.0.2 is loopback too, and nothing listens on it.
        _counting_lookups(monkeypatch, [("127.0.0.2", port), ("127.0.0.1", port)])
        async with pool.request(origin(port, host="upstream.test"), "GET", "/", {}, b"") as answer:
            assert await answer.read() == b"{}"
        assert server.connections == 1
    await pool.close()
