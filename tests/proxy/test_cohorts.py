"""Cohorts: with other requests in flight, the reverse proxy gives the event
loop a turn before parsing, the secret floor, the injection check, the send
and the answer's check.

Under load that turn lets the requests that arrived together reach the same
step before any of them goes on, so each step's code and tables are read
once for all of them; `bench instructions --concurrency 50` counts the cache
misses it saves. Here the order of the steps is checked, and that a lone
request takes no extra turn: a ticker counts the event loop's turns, and
the handler's entry, the parse, both checks and the send upstream each note
theirs.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.pytest_plugin import AiohttpServer
from aiohttp.test_utils import TestServer

from gateway.app import PROXY, make_app
from gateway.guard.pipeline import Guard
from gateway.proxy import reverse
from gateway.proxy.origin import Origins
from tests.conftest import build_config
from tests.fakes import FakeUpstream

CHAT = "/openai/v1/chat/completions"
BODY = json.dumps(
    {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "What is a cohort?"}]}
).encode()


@contextmanager
def _turns() -> Iterator[Callable[[], int]]:
    """The number of event loop turns so far: a callback that schedules itself runs once a turn."""
    loop = asyncio.get_running_loop()
    count = 0
    handle: asyncio.Handle | None = None

    def tick() -> None:
        nonlocal count, handle
        count += 1
        handle = loop.call_soon(tick)

    tick()
    try:
        yield lambda: count
    finally:
        assert handle is not None
        handle.cancel()


class _Entered:
    """The proxy's handler, noting the turn a request enters it."""

    def __init__(self, proxy: reverse.ReverseProxy, note: Callable[[str], None]) -> None:
        self._proxy = proxy
        self._note = note

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self._note("entered")
        return await self._proxy.handle(request)


class _Together:
    """The proxy's handler: lets the first request in, then holds each of the
    next ones at its door until `size` are there."""

    def __init__(self, proxy: reverse.ReverseProxy, size: int) -> None:
        self._proxy = proxy
        self._size = size
        self.first_in = asyncio.Event()
        self._waiting = 0
        self._all_in = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not self.first_in.is_set():
            self.first_in.set()
        else:
            self._waiting += 1
            if self._waiting == self._size:
                self._all_in.set()
            await self._all_in.wait()
        return await self._proxy.handle(request)


async def _started(
    aiohttp_server: AiohttpServer,
    tmp_path: Path,
    fake: FakeUpstream,
    door: Callable[[reverse.ReverseProxy], _Entered | _Together],
) -> TestServer:
    upstream = await aiohttp_server(fake.app())
    config = build_config(str(upstream.make_url("")).rstrip("/"), tmp_path / "audit.jsonl")
    app = make_app(config)

    async def fit(app: web.Application) -> None:
        # The proxy is made at startup, once the shared client session is.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            # The door stands in for the proxy: the route handler calls only its `handle`.
            app[PROXY] = door(app[PROXY])  # type: ignore[misc]

    app.on_startup.append(fit)
    server: TestServer = await aiohttp_server(app)
    return server


def _noting(monkeypatch: pytest.MonkeyPatch, note: Callable[[str], None]) -> None:
    """Note each parse of a request body, each secret floor and injection
    check, and each request sent upstream."""
    parse = reverse.request_segments

    def parsed(*args: Any) -> Any:
        note("parsed")
        return parse(*args)

    monkeypatch.setattr(reverse, "request_segments", parsed)
    floor, injection = Guard.inspect, Guard.judge

    async def floored(self: Guard, *args: Any, **kwargs: Any) -> Any:
        note("floor")
        return await floor(self, *args, **kwargs)

    async def judged(self: Guard, *args: Any, **kwargs: Any) -> Any:
        note("injection")
        return await injection(self, *args, **kwargs)

    monkeypatch.setattr(Guard, "inspect", floored)
    monkeypatch.setattr(Guard, "judge", judged)
    request = Origins.request

    def sent(self: Origins, *args: Any, **kwargs: Any) -> Any:
        note("sent")
        return request(self, *args, **kwargs)

    monkeypatch.setattr(Origins, "request", sent)


async def test_a_lone_request_takes_no_extra_turn(
    aiohttp_server: AiohttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeUpstream()
    with _turns() as turn:
        seen: dict[str, int] = {}

        def note(event: str) -> None:
            seen.setdefault(event, turn())

        server = await _started(aiohttp_server, tmp_path, fake, lambda p: _Entered(p, note))
        _noting(monkeypatch, note)
        headers = {"Content-Type": "application/json"}
        async with (
            aiohttp.ClientSession() as client,
            client.post(server.make_url(CHAT), data=BODY, headers=headers) as response,
        ):
            assert response.status == 200, await response.text()
            assert response.headers["x-reefgate-decision"] == "allow"
    assert len(fake.received) == 1
    # The whole body came with the headers: nothing else made it wait.
    assert (
        seen["entered"] == seen["parsed"] == seen["floor"] == seen["injection"] == seen["sent"]
    ), seen


async def test_requests_in_flight_together_are_checked_together(
    aiohttp_server: AiohttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a request in flight, requests that reach the handler together are
    all parsed, then all put through the secret floor, then all through the
    injection check, before any of them is sent."""
    fake = FakeUpstream(delay=0.5)
    order: list[str] = []
    doors: list[_Together] = []

    def door(proxy: reverse.ReverseProxy) -> _Together:
        doors.append(_Together(proxy, 4))
        return doors[0]

    server = await _started(aiohttp_server, tmp_path, fake, door)
    _noting(monkeypatch, order.append)
    headers = {"Content-Type": "application/json"}

    async def post(client: aiohttp.ClientSession) -> int:
        async with client.post(server.make_url(CHAT), data=BODY, headers=headers) as response:
            await response.read()
            return response.status

    async with aiohttp.ClientSession() as client:
        # The first request waits on the upstream (half a second) while the
        # others come in; it goes through the door without waiting, and runs
        # to its send before the test is woken.
        first = asyncio.ensure_future(post(client))
        await doors[0].first_in.wait()
        statuses = await asyncio.gather(first, *(post(client) for _ in range(4)))
    assert statuses == [200] * 5
    # One at a time, each would be parsed, checked and sent before the next.
    each = ["parsed", "floor", "injection", "sent"]
    assert order == each + [step for step in each for _ in range(4)], order
    assert len(fake.received) == 5
