"""Two `reefgate serve` replicas on one PostgreSQL store: approve on one, the other releases."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg  # type: ignore[import-untyped]
import openai
import pytest

from tests.fakes import FakeUpstream
from tests.guard.fake_classifier import PINNED, FakeClassifier

REEFGATE = Path(sys.executable).with_name("reefgate")
DATABASE = "postgresql://postgres@127.0.0.1:5432/test"
ADMIN_TOKEN = "admin-" + "Vb7qL2mX9rT4wK8nZ3cY6dH1"
ENV = {"ADMIN_TOKEN": ADMIN_TOKEN, "GUARD_KEY": "guard-key"}
HELD = "please REVIEWME before you send this"


@dataclass
class Replica:
    name: str
    url: str
    admin_url: str
    process: subprocess.Popen[str]
    log: Path


def _config(directory: Path, *, upstream: str, classifier: str, store: str) -> None:
    (directory / "teams").mkdir(parents=True)
    (directory / "gateway.yaml").write_text(
        "listen: {host: 127.0.0.1, port: 0}\n"
        f"audit: {{path: {directory / 'audit.jsonl'}}}\n"
        f"upstreams:\n  openai: {{base_url: '{upstream}'}}\n"
        "guard:\n"
        "  classifier:\n"
        f"    {{provider: openai, base_url: '{classifier}', pinned_model: {PINNED},"
        " api_key_env: GUARD_KEY}\n"
        f"review: {{store: '{store}', hold: wait, hold_timeout_s: 60}}\n"
        "admin:\n  listen: {host: 127.0.0.1, port: 0}\n  token_env: ADMIN_TOKEN\n"
    )
    (directory / "teams" / "default.yaml").write_text("default: true\n")


def _start(name: str, directory: Path) -> Replica:
    log = directory / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(REEFGATE), "serve", "--config", str(directory)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=directory,
            env={**os.environ, **ENV, "PYTHONUNBUFFERED": "1"},
        )
    assert process.stdout is not None
    main = process.stdout.readline()
    assert " listening on http://" in main, main + log.read_text()
    admin = process.stdout.readline()
    assert admin.startswith("reefgate admin listening on "), admin + log.read_text()
    return Replica(
        name,
        main.split(" listening on ")[1].split()[0],
        admin.split(" listening on ")[1].strip(),
        process,
        log,
    )


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    name = f"rg_replicas_{os.getpid()}_{os.urandom(3).hex()}"
    yield name
    conn = await asyncpg.connect(DATABASE)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    finally:
        await conn.close()


async def _listed(replica: Replica, status: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{replica.admin_url}/admin/reviews?status={status}", headers=headers) as r,
    ):
        assert r.status == 200
        found: list[dict[str, Any]] = await r.json()
        return found


async def _pending(replica: Replica) -> list[dict[str, Any]]:
    return await _listed(replica, "pending")


async def _approved(replica: Replica) -> list[dict[str, Any]]:
    return await _listed(replica, "approved")


async def test_an_approval_on_one_replica_releases_a_request_held_on_another(
    aiohttp_server: Any, tmp_path: Path, schema: str
) -> None:
    upstream = await aiohttp_server(FakeUpstream().app())
    classifier = await aiohttp_server(FakeClassifier().app())
    store = f"{DATABASE}?schema={schema}"
    replicas: list[Replica] = []
    try:
        for name in ("a", "b"):
            _config(
                tmp_path / name,
                upstream=str(upstream.make_url("")).rstrip("/"),
                classifier=str(classifier.make_url("")).rstrip("/"),
                store=store,
            )
            replicas.append(_start(name, tmp_path / name))
        a, b = replicas
        client = openai.AsyncOpenAI(base_url=f"{a.url}/openai/v1", api_key="agent", max_retries=0)
        held = asyncio.ensure_future(
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": HELD}]
            )
        )
        # The review a makes is in the shared store, so b lists it.
        deadline = time.monotonic() + 20
        while not (waiting := await _pending(b)):
            assert time.monotonic() < deadline, "the held request made no review"
            assert not held.done(), held
            await asyncio.sleep(0.05)
        [review] = waiting
        # A reviewer approves on replica b, with the CLI.
        approve = await asyncio.create_subprocess_exec(
            str(REEFGATE),
            "reviews",
            "approve",
            review["id"],
            "--admin-url",
            b.admin_url,
            "--token",
            ADMIN_TOKEN,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await approve.communicate()
        assert approve.returncode == 0, err.decode()
        completion = await asyncio.wait_for(held, 10)
        released = time.time()
        assert completion.choices[0].message.content == "hello from upstream"
        assert await _pending(a) == []
        [decided] = [r for r in await _approved(b) if r["id"] == review["id"]]
        assert decided["decided_by"] == "admin"
        # Release comes by notification, not by a poll of seconds; the bound is
        # generous for a loaded machine (it is milliseconds here).
        released_in = released - decided["decided_at"]
        assert released_in < 5, released_in
        print(f"\nreleased on replica a {released_in * 1000:.0f} ms after the decision on b")
    finally:
        for replica in replicas:
            replica.process.send_signal(signal.SIGTERM)
        for replica in replicas:
            assert replica.process.wait(timeout=20) == 0, replica.log.read_text()
