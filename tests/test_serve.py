"""`reefgate serve` as an operator runs it: SIGTERM drains, SIGHUP reloads, --workers N."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from gateway.observe.audit import AuditLog
from tests.conftest import AiohttpServer
from tests.fakes import FakeUpstream
from tests.gated import GatedUpstream, data_lines, stream_request, streamed_text

REEFGATE = Path(sys.executable).with_name("reefgate")
ADMIN_TOKEN = "admin-" + "Qw3rT8yU1iO5pA9sD2fG"
# Generous bounds on waits for a process: they only end a test that would hang.
WAIT_S = 30.0


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    log: Path

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        return host, int(port)

    def logged(self) -> str:
        return self.log.read_text()


def _write_config(directory: Path, upstream: str, extra: str = "", team: str = "") -> Path:
    config = directory / "config"
    (config / "teams").mkdir(parents=True)
    (config / "gateway.yaml").write_text(
        "listen: {host: 127.0.0.1, port: 0}\n"
        f"audit: {{path: {directory / 'var' / 'audit.jsonl'}}}\n"
        f"review: {{store: 'sqlite:///{directory / 'var' / 'reviews.sqlite3'}'}}\n"
        f"upstreams:\n  openai: {{base_url: '{upstream}'}}\n" + extra
    )
    (config / "teams" / "default.yaml").write_text("default: true\n" + team)
    return config


def _spawn(config: Path, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    log = config.parent / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(REEFGATE), "serve", "--config", str(config), *extra],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=config.parent,
            env={**os.environ, "ADMIN_TOKEN": ADMIN_TOKEN, "PYTHONUNBUFFERED": "1"},
        )
    return process, log


def _listening(line: str, log: Path) -> str:
    assert " listening on http://" in line, line + log.read_text()
    return line.split(" listening on ")[1].split()[0]


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def _start(config: Path, processes: list[subprocess.Popen[str]]) -> Served:
    process, log = _spawn(config)
    processes.append(process)
    assert process.stdout is not None
    return Served(process, _listening(process.stdout.readline(), log), log)


def _verify(*paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REEFGATE), "audit", "verify", *paths],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def _exit_code(process: subprocess.Popen[str]) -> int:
    return await asyncio.to_thread(process.wait, WAIT_S)


async def _until_refused(host: str, port: int) -> None:
    """Returns once a new connection to the port is refused."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            _, writer = await asyncio.open_connection(host, port)
        except ConnectionRefusedError:
            return
        except ConnectionResetError:
            # The connection sat in the backlog of a listener that closed: not
            # yet a refusal, so try again.
            pass
        else:
            writer.close()
            with contextlib.suppress(ConnectionResetError):
                await writer.wait_closed()
        assert time.monotonic() < deadline, "the listener still accepts connections"
        await asyncio.sleep(0.01)


async def _until_logged(served: Served, text: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while text not in served.logged():
        assert served.process.poll() is None, served.logged()
        assert time.monotonic() < deadline, f"not logged: {text!r}\n{served.logged()}"
        await asyncio.sleep(0.02)


async def test_sigterm_lets_a_stream_finish_and_refuses_new_connections(
    aiohttp_server: AiohttpServer, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    upstream = GatedUpstream()
    upstream_server = await aiohttp_server(upstream.app())
    config = _write_config(tmp_path, str(upstream_server.make_url("")).rstrip("/"))
    served = _start(config, processes)
    url = f"{served.url}/openai/v1/chat/completions"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=stream_request(), headers={"Content-Type": "application/json"}) as r,
    ):
        assert r.status == 200
        first = await r.content.readline()
        assert first.startswith(b"data: ")
        await upstream.started.wait()

        served.process.send_signal(signal.SIGTERM)
        await _until_refused(*served.address)
        # The stream is still open: the gateway waits for it.
        assert served.process.poll() is None
        upstream.release.set()
        body = first + await r.read()

    assert data_lines(body)[-1] == "[DONE]"
    assert len(data_lines(body)) == len(upstream.events())
    assert streamed_text(body) == upstream.text
    assert await _exit_code(served.process) == 0, served.logged()
    assert "draining the requests in flight" in served.logged()
    [entry] = (tmp_path / "var" / "audit.jsonl").read_text().splitlines()
    assert json.loads(entry)["event"]["payload"]["status"] == 200


async def test_sighup_reloads_and_an_invalid_config_keeps_the_running_one(
    aiohttp_server: AiohttpServer, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    upstream_server = await aiohttp_server(FakeUpstream().app())
    upstream = str(upstream_server.make_url("")).rstrip("/")
    config = _write_config(
        tmp_path, upstream, f"  second: {{base_url: '{upstream}'}}\n", "upstreams: [openai]\n"
    )
    served = _start(config, processes)

    async def status() -> int:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{served.url}/second/v1/models") as r,
        ):
            return r.status

    assert await status() == 403  # upstream_not_allowed
    (config / "teams" / "default.yaml").write_text("default: true\n")
    served.process.send_signal(signal.SIGHUP)
    await _until_logged(served, "SIGHUP: reloading the config")
    await _until_logged(served, "config reloaded from")
    assert await status() == 200

    (config / "teams" / "default.yaml").write_text("default: true\nupstreams: [openai]\ntypo: 1\n")
    served.process.send_signal(signal.SIGHUP)
    await _until_logged(served, f"{config / 'teams' / 'default.yaml'}: typo: unknown key")
    await _until_logged(served, "still serving the running config")
    assert await status() == 200

    served.process.send_signal(signal.SIGTERM)
    assert await _exit_code(served.process) == 0, served.logged()


async def test_two_workers_share_the_port_and_each_keeps_its_own_chain(
    aiohttp_server: AiohttpServer, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    upstream_server = await aiohttp_server(FakeUpstream().app())
    config = _write_config(
        tmp_path,
        str(upstream_server.make_url("")).rstrip("/"),
        "admin:\n  listen: {host: 127.0.0.1, port: 0}\n  token_env: ADMIN_TOKEN\n",
    )
    process, log = _spawn(config, "--workers", "2")
    processes.append(process)
    assert process.stdout is not None
    urls: list[str] = []
    admins: list[str] = []
    while len(urls) < 2 or not admins:
        line = process.stdout.readline()
        assert line, log.read_text()
        if line.startswith("reefgate admin listening on "):
            admins.append(line)
        else:
            urls.append(_listening(line, log))
    assert urls[0] == urls[1]

    var = tmp_path / "var"
    chains = [var / "audit.w1.jsonl", var / "audit.w2.jsonl"]

    def entries(path: Path) -> int:
        return len(path.read_text().splitlines()) if path.exists() else 0

    sent = 0
    # A new connection each time: the kernel picks a worker per connection.
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        while not all(entries(chain) for chain in chains):
            assert sent < 400, "one worker took every connection"
            async with session.get(f"{urls[0]}/openai/v1/models") as r:
                assert r.status == 200
            sent += 1
        # The admin listener answers (worker 1's).
        admin_url = admins[0].split(" listening on ")[1].strip()
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with session.get(f"{admin_url}/admin/reviews", headers=headers) as r:
            assert r.status == 200

    process.send_signal(signal.SIGTERM)
    assert await _exit_code(process) == 0, log.read_text()
    assert sum(entries(chain) for chain in chains) == sent
    assert not (var / "audit.jsonl").exists()
    for given in ([str(var)], [str(var / "audit.w*.jsonl")], [str(c) for c in chains]):
        out = _verify(*given)
        assert out.returncode == 0, out.stderr
        assert "2 of 2 chains ok" in out.stdout
        for chain in chains:
            assert f"{chain}: ok, {entries(chain)} entries" in out.stdout


def test_a_worker_that_cannot_start_fails_the_whole_serve(tmp_path: Path) -> None:
    config = _write_config(tmp_path, "http://127.0.0.1:9")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["serve", "--config", str(config), "--workers", "2", "--port", str(port)]
        out = subprocess.run(
            [str(REEFGATE), *argv],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
        )
    assert out.returncode == 2, out.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr


def test_audit_verify_reports_each_chain(tmp_path: Path) -> None:
    for name in ("audit.w1.jsonl", "audit.w2.jsonl"):
        with AuditLog(tmp_path / name) as log:
            log.append("request", {"n": 1})
            log.append("request", {"n": 2})
    broken = tmp_path / "audit.w2.jsonl"
    lines = broken.read_text().splitlines()
    broken.write_text(lines[0].replace('"n":1', '"n":3') + "\n" + lines[1] + "\n")

    out = _verify(str(tmp_path))
    assert out.returncode == 1
    assert f"{tmp_path / 'audit.w1.jsonl'}: ok, 2 entries" in out.stdout
    assert f"{broken}: BROKEN at line 1" in out.stderr
    assert "1 of 2 chains ok" in out.stdout
    out = _verify(str(tmp_path / "audit.w1.jsonl"))
    assert out.returncode == 0
    assert "chains ok" not in out.stdout  # one file: one line, as before
    out = _verify(str(tmp_path / "audit.w1.jsonl"), str(tmp_path / "nothing-*.jsonl"))
    assert out.returncode == 1
    assert "no audit file in" in out.stderr


async def test_detection_controls_from_team_yaml(
    aiohttp_server: AiohttpServer, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    import openai

    fake = FakeUpstream()
    upstream_server = await aiohttp_server(fake.app())
    upstream = str(upstream_server.make_url("")).rstrip("/")
    config = _write_config(
        tmp_path,
        upstream,
        team=(
            "allow:\n  patterns: ['AKIA[A-Z0-9]{9}EXAMPLE']\n"
            "detectors:\n  custom:\n    - {kind: project_falcon, pattern: '(?i)project falcon'}\n"
            "outbound: {on_secret: redact}\n"
        ),
    )
    served = _start(config, processes)
    client = openai.AsyncOpenAI(base_url=f"{served.url}/openai/v1", api_key="k", max_retries=0)
    pat = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    example = "AKIA" + "IOSFODNN7EXAMPLE"
    completion = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"{example} is fine, {pat} is not; Project Falcon"}],
    )
    assert completion.choices[0].message.content == "hello from upstream"
    sent = json.loads(fake.received[0].body)["messages"][0]["content"]
    assert sent == f"{example} is fine, [REDACTED:github_token] is not; [REDACTED:project_falcon]"
    served.process.send_signal(signal.SIGTERM)
    assert await _exit_code(served.process) == 0, served.logged()
    [entry] = [
        json.loads(line)["event"]["payload"]
        for line in (tmp_path / "var" / "audit.jsonl").read_text().splitlines()
    ]
    assert entry["allowed"][0]["rule"] == "allow.patterns[0]"
    assert sorted(r["kind"] for r in entry["redacted"]) == ["github_token", "project_falcon"]
