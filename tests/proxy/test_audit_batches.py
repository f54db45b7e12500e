"""Audit entries under load: the entries of requests that end in the same
turn of the event loop are written together, and no answer leaves before
its entry is written."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.pytest_plugin import AiohttpServer

from gateway.observe import audit as audit_mod
from gateway.observe.audit import AuditLog, verify
from gateway.observe.metrics import Metrics
from gateway.proxy import reverse
from gateway.proxy.exchange import Exchange
from gateway.proxy.middleware import Ledger
from tests.fakes import FakeUpstream
from tests.observe.test_audit import _counting_writes
from tests.proxy.test_cohorts import BODY, CHAT, _started, _Together


def _ids(data: bytes) -> list[str]:
    """The request ids of the audit entries in ``data`` (the key file is written too)."""
    lines = [line for line in data.splitlines() if line.startswith(b'{"entryHash"')]
    return [json.loads(line)["event"]["payload"]["request_id"] for line in lines]


async def test_entries_deferred_in_one_turn_are_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes = _counting_writes(monkeypatch)
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        ledger = Ledger(log, Metrics(), frozenset({"openai"}))
        for n in range(3):
            ledger.record(Exchange(f"r{n}", "POST", "openai", "/v1/x", ""), defer=True)
        assert writes == []
        await asyncio.sleep(0)
        assert [_ids(w) for w in writes] == [["r0", "r1", "r2"]]
        # The next turn's entries are the next write; an entry not deferred is written at once.
        ledger.record(Exchange("r3", "POST", "openai", "/v1/x", ""), defer=True)
        ledger.record(Exchange("r4", "POST", "openai", "/v1/x", ""))
        assert [_ids(w) for w in writes] == [["r0", "r1", "r2"], ["r3", "r4"]]
        await asyncio.sleep(0)
        assert len(writes) == 2
    assert verify(path).entries == 5


async def test_no_answer_leaves_before_its_entry_is_written(
    aiohttp_server: AiohttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five requests in flight together: each one's entry is written before its
    answer's headers go out, and some entries share a write."""
    fake = FakeUpstream(delay=0.3)
    events: list[tuple[str, str]] = []
    real_write = audit_mod._write_all

    def written(fd: int, data: bytes) -> None:
        real_write(fd, data)
        if ids := _ids(data):
            events.extend(("written", request_id) for request_id in ids)
            events.append(("write", ""))

    monkeypatch.setattr(audit_mod, "_write_all", written)
    prepare = web.StreamResponse.prepare

    async def answered(self: web.StreamResponse, request: web.BaseRequest) -> Any:
        request_id = self.headers.get("x-reefgate-request-id")
        if request_id is not None and not self.prepared:
            events.append(("answered", request_id))
        return await prepare(self, request)

    monkeypatch.setattr(web.StreamResponse, "prepare", answered)
    doors: list[_Together] = []

    def door(proxy: reverse.ReverseProxy) -> _Together:
        doors.append(_Together(proxy, 4))
        return doors[0]

    server = await _started(aiohttp_server, tmp_path, fake, door)
    headers = {"Content-Type": "application/json"}

    async def post(client: aiohttp.ClientSession) -> str:
        async with client.post(server.make_url(CHAT), data=BODY, headers=headers) as response:
            await response.read()
            assert response.status == 200
            return response.headers["x-reefgate-request-id"]

    async with aiohttp.ClientSession() as client:
        first = asyncio.ensure_future(post(client))
        await doors[0].first_in.wait()
        ids = await asyncio.gather(first, *(post(client) for _ in range(4)))
    order = {event: events.index(event) for event in events if event[0] != "write"}
    for request_id in ids:
        assert order[("written", request_id)] < order[("answered", request_id)], events
    # The requests held at the door end together: fewer writes than entries.
    assert events.count(("write", "")) < len(ids), events
    assert verify(tmp_path / "audit.jsonl").entries == len(ids)
