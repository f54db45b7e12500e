"""Config reload while serving: new requests get the new config, requests in flight keep theirs."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web

from gateway.app import GENERATION, ON_RELOAD, make_app, reload
from gateway.config.loader import load
from gateway.config.reload import ConfigFiles, pin_restart_keys
from gateway.proxy.lifecycle import ServeLoop
from gateway.review.admin import Tokens
from tests.conftest import AiohttpServer, GatewayTestServer
from tests.fakes import FakeUpstream
from tests.gated import GatedUpstream, stream_request, streamed_calls, streamed_text
from tests.replies import Call

SHELL = Call.shell("ls -la")
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
DENY_SHELL = "default: true\ntools: {deny: [shell]}\n"


@dataclass
class Served:
    app: web.Application
    url: str
    config_dir: Path
    audit: Path

    def write(self, name: str, text: str) -> None:
        path = self.config_dir / name
        path.write_text(text)


def _gateway_yaml(upstream: str, tmp_path: Path, extra: str = "") -> str:
    return (
        "listen: {host: 127.0.0.1, port: 0}\n"
        f"audit: {{path: {tmp_path / 'audit.jsonl'}}}\n"
        f"review: {{store: 'sqlite:///{tmp_path / 'reviews.sqlite3'}'}}\n"
        f"upstreams:\n  openai: {{base_url: '{upstream}'}}\n" + extra
    )


async def _serve(
    aiohttp_server: AiohttpServer, tmp_path: Path, upstream_app: web.Application
) -> Served:
    upstream = await aiohttp_server(upstream_app)
    config_dir = tmp_path / "config"
    (config_dir / "teams").mkdir(parents=True)
    upstream_url = str(upstream.make_url("")).rstrip("/")
    (config_dir / "gateway.yaml").write_text(_gateway_yaml(upstream_url, tmp_path))
    (config_dir / "teams" / "default.yaml").write_text("default: true\n")
    app = make_app(load(config_dir))
    server = GatewayTestServer(app)
    await server.start_server()
    return Served(app, str(server.make_url("")).rstrip("/"), config_dir, tmp_path / "audit.jsonl")


async def _chat(served: Served) -> Any:
    async with openai.AsyncOpenAI(
        base_url=f"{served.url}/openai/v1", api_key="agent-key", max_retries=0
    ) as client:
        return await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "tidy up"}], tools=TOOLS
        )


def _audited(served: Served) -> list[dict[str, Any]]:
    lines = served.audit.read_text().splitlines()
    return [json.loads(line)["event"]["payload"] for line in lines]


@pytest.fixture
async def tools_served(aiohttp_server: AiohttpServer, tmp_path: Path) -> Served:
    return await _serve(aiohttp_server, tmp_path, FakeUpstream(reply=("On it.", [SHELL])).app())


async def test_a_valid_change_applies_to_the_next_request(tools_served: Served) -> None:
    served = tools_served
    [call] = (await _chat(served)).choices[0].message.tool_calls
    assert call.function.name == "shell"
    before = served.app[GENERATION]

    served.write("teams/default.yaml", DENY_SHELL)
    assert reload(served.app, served.config_dir)

    choice = (await _chat(served)).choices[0]
    assert not choice.message.tool_calls
    assert "policy" in choice.message.content
    outcomes = [entry["tool_calls"][0]["outcome"] for entry in _audited(served)]
    assert outcomes == ["allow", "deny"]
    # The agents' circuit breakers outlive a reload that leaves their settings alone.
    assert served.app[GENERATION].guardian.breaker is before.guardian.breaker
    assert served.app[GENERATION].proxy is not before.proxy


async def test_a_request_in_flight_finishes_on_the_config_it_started_with(
    aiohttp_server: AiohttpServer, tmp_path: Path
) -> None:
    upstream = GatedUpstream(calls=[SHELL])
    served = await _serve(aiohttp_server, tmp_path, upstream.app())
    url = f"{served.url}/openai/v1/chat/completions"
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession() as session:
        async with session.post(url, data=stream_request(), headers=headers) as in_flight:
            await upstream.started.wait()
            served.write("teams/default.yaml", DENY_SHELL)
            assert reload(served.app, served.config_dir)
            upstream.release.set()
            body = await in_flight.read()
        # Started before the reload: the call the old config allows reaches the agent.
        assert streamed_calls(body) == ["shell"]
        assert streamed_text(body).startswith(upstream.text)
        async with session.post(url, data=stream_request(), headers=headers) as after:
            later = await after.read()
    # Started after it: the team's new tools.deny replaces the call.
    assert streamed_calls(later) == []
    assert "policy" in streamed_text(later)


async def test_an_invalid_change_is_logged_and_the_running_config_keeps_serving(
    tools_served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    served = tools_served
    caplog.set_level(logging.INFO)
    before = served.app[GENERATION]
    served.write("teams/default.yaml", DENY_SHELL + "tols: {deny: [other]}\n")
    served.write("gateway.yaml", (served.config_dir / "gateway.yaml").read_text() + "guard: 7\n")

    assert not reload(served.app, served.config_dir)

    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    team_file = served.config_dir / "teams" / "default.yaml"
    assert f"config reload: {team_file}: tols: unknown key" in errors
    assert any(f"{served.config_dir / 'gateway.yaml'}: guard: " in e for e in errors)
    assert served.app[GENERATION] is before
    # Still the old config: the call passes.
    [call] = (await _chat(served)).choices[0].message.tool_calls
    assert call.function.name == "shell"
    async with aiohttp.ClientSession() as session, session.get(f"{served.url}/readyz") as r:
        assert r.status == 200


async def test_settings_read_at_start_keep_their_value_and_are_named(
    tools_served: Served, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    served = tools_served
    caplog.set_level(logging.INFO)
    gateway_yaml = (served.config_dir / "gateway.yaml").read_text()
    upstream_url = gateway_yaml.split("base_url: '")[1].split("'")[0]
    served.write(
        "gateway.yaml",
        "listen: {host: 127.0.0.1, port: 9999}\n"
        f"audit: {{path: {tmp_path / 'elsewhere.jsonl'}}}\n"
        f"review: {{store: 'sqlite:///{tmp_path / 'other.sqlite3'}', hold: wait}}\n"
        "limits: {upstream_connections: 7, inspect_timeout_ms: 2000}\n"
        f"upstreams:\n  openai: {{base_url: '{upstream_url}'}}\n"
        f"  second: {{base_url: '{upstream_url}'}}\n",
    )
    served.write("teams/default.yaml", DENY_SHELL)
    served.write(
        "teams/ops.yaml",
        "match: {headers: {x-team: ops}}\n"
        f"review: {{store: 'sqlite:///{tmp_path / 'ops.sqlite3'}'}}\n",
    )

    assert reload(served.app, served.config_dir)

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    gw = served.config_dir / "gateway.yaml"
    for key in ("listen", "audit", "review.store", "limits.upstream_connections"):
        assert f"config reload: {gw}: {key}: needs a restart" in " | ".join(warnings), key
    ops = served.config_dir / "teams" / "ops.yaml"
    assert f"config reload: {ops}: review.store: needs a restart" in " | ".join(warnings)
    config = served.app[GENERATION].config
    # Kept: what was opened at start.
    assert config.gateway.listen.port == 0
    assert config.gateway.audit.path == tmp_path / "audit.jsonl"
    assert config.gateway.review.store == f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    assert config.teams["ops"].review.store is None
    assert config.gateway.limits.upstream_connections == 4096
    # Applied: everything else.
    assert config.gateway.review.hold == "wait"
    assert config.gateway.limits.inspect_timeout_ms == 2000
    assert set(config.teams) == {"default", "ops"}
    assert not (await _chat(served)).choices[0].message.tool_calls
    # The new upstream is routed, and its entry goes to the audit log opened at start.
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{served.url}/second/v1/models") as r,
    ):
        assert r.status == 200
        async with session.get(f"{served.url}/metrics") as scraped:
            assert 'upstream="second"' in await scraped.text()
    assert _audited(served)[-1]["upstream"] == "second"
    assert not (tmp_path / "elsewhere.jsonl").exists()


def test_pinning_keeps_a_removed_teams_store_for_its_return(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    (config_dir / "teams").mkdir(parents=True)
    store = f"sqlite:///{tmp_path / 'a.sqlite3'}"
    (config_dir / "gateway.yaml").write_text(_gateway_yaml("http://127.0.0.1:9", tmp_path))
    (config_dir / "teams" / "a.yaml").write_text(f"default: true\nreview: {{store: '{store}'}}\n")
    running = load(config_dir)
    urls = {running.gateway.review.store, store}
    # Dropped, then back with its store: that store is still open, nothing to restart.
    (config_dir / "teams" / "a.yaml").write_text("default: true\n")
    dropped, issues = pin_restart_keys(running, load(config_dir), urls)
    assert issues == []
    (config_dir / "teams" / "a.yaml").write_text(f"default: true\nreview: {{store: '{store}'}}\n")
    back, issues = pin_restart_keys(dropped, load(config_dir), urls)
    assert issues == []
    assert back.teams["a"].review.store == store


def test_admin_tokens_follow_a_reload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLD_TOKEN", "old-" + "t" * 30)
    monkeypatch.setenv("NEW_TOKEN", "new-" + "t" * 30)
    config_dir = tmp_path / "config"
    (config_dir / "teams").mkdir(parents=True)
    gateway_yaml = _gateway_yaml("http://127.0.0.1:9", tmp_path)
    (config_dir / "gateway.yaml").write_text(gateway_yaml + "admin: {token_env: OLD_TOKEN}\n")
    (config_dir / "teams" / "default.yaml").write_text("default: true\n")
    tokens = Tokens(load(config_dir))
    assert tokens.identify("Bearer " + os.environ["OLD_TOKEN"]) is not None
    (config_dir / "teams" / "default.yaml").write_text(
        "default: true\nreviewers: {tokens_env: [NEW_TOKEN]}\n"
    )
    (config_dir / "gateway.yaml").write_text(gateway_yaml)
    tokens.update(load(config_dir))
    assert tokens.identify("Bearer " + os.environ["OLD_TOKEN"]) is None
    reviewer = tokens.identify("Bearer " + os.environ["NEW_TOKEN"])
    assert reviewer is not None and reviewer.may_see("default") and not reviewer.admin


def test_config_files_notice_edits_new_files_and_removals(tmp_path: Path) -> None:
    (tmp_path / "teams").mkdir()
    gateway_yaml = tmp_path / "gateway.yaml"
    gateway_yaml.write_text("listen: {port: 0}\n")
    files = ConfigFiles(tmp_path)
    assert not files.changed()
    gateway_yaml.write_text("listen: {port: 1}\n")
    assert files.changed()
    assert not files.changed()
    (tmp_path / "teams" / "a.yaml").write_text("default: true\n")
    assert files.changed()
    (tmp_path / "teams" / "notes.txt").write_text("not config")
    assert not files.changed()
    (tmp_path / "teams" / "a.yaml").unlink()
    assert files.changed()


async def test_reload_runs_while_requests_are_served(tools_served: Served) -> None:
    """Reloads between and during requests: every request is answered by one config or the other."""
    served = tools_served

    async def flip(n: int) -> None:
        for i in range(n):
            served.write("teams/default.yaml", DENY_SHELL if i % 2 else "default: true\n")
            assert reload(served.app, served.config_dir)
            await asyncio.sleep(0)

    results = await asyncio.gather(*(_chat(served) for _ in range(10)), flip(6))
    for completion in results[:10]:
        choice = completion.choices[0]
        removed = "was removed and not run" in (choice.message.content or "")
        assert bool(choice.message.tool_calls) != removed


async def test_a_saved_file_is_noticed_and_reloaded(tools_served: Served) -> None:
    served = tools_served
    reloaded = asyncio.Event()
    served.app[ON_RELOAD].append(lambda config: reloaded.set())
    serving = ServeLoop(served.app, served.config_dir, interval=0.01)
    watching = asyncio.ensure_future(serving.watch())
    try:
        served.write("teams/default.yaml", DENY_SHELL)
        async with asyncio.timeout(10):
            await reloaded.wait()
    finally:
        watching.cancel()
    assert served.app[GENERATION].config.teams["default"].tools.deny == ["shell"]


async def test_a_failing_reload_is_logged_and_serving_goes_on(
    tools_served: Served, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(app: web.Application, config_dir: Path) -> bool:
        raise RuntimeError("a bug")

    monkeypatch.setattr("gateway.app.reload", broken)
    serving = ServeLoop(tools_served.app, tools_served.config_dir)
    assert not serving.reload("SIGHUP")
    assert any("config reload failed" in r.getMessage() for r in caplog.records)
    assert (await _chat(tools_served)).choices[0].message.tool_calls


SECRET = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
ALLOWING = "default: true\nallow: {patterns: ['ghp_R8mK\\w+']}\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [((ALLOWING, 200), ("default: true\n", 403)), (("default: true\n", 403), (ALLOWING, 200))],
    ids=["allowance-dropped", "allowance-added"],
)
async def test_a_resent_history_is_judged_by_the_reloaded_guard(
    aiohttp_server: AiohttpServer,
    tmp_path: Path,
    before: tuple[str, int],
    after: tuple[str, int],
) -> None:
    """The segments of a resent history are shared across requests and carry the
    guard's results; after a reload, the same bytes are judged by the new guard.

    Which patterns match a finding is kept with the finding, guard-wide, so a
    result left by the old guard would refuse what the added allowance allows.
    """
    upstream = FakeUpstream()
    served = await _serve(aiohttp_server, tmp_path, upstream.app())
    served.write("teams/default.yaml", before[0])
    assert reload(served.app, served.config_dir)
    # Long enough for the parse memo (a body of 1 KB, parts of 64 bytes), and
    # this test's own: the memo and the walker's kept segments are process-wide.
    own = tmp_path.name
    messages = [
        {"role": "system", "content": f"You are {own}, a helpful agent. " * 8},
        {"role": "user", "content": f"Deploy {own} to staging with the token {SECRET}. " * 3},
        {"role": "assistant", "content": f"Deployed {own}; the health checks pass. " * 6},
        {"role": "user", "content": f"Now tell me what changed in {own} since then. " * 4},
    ]
    body = json.dumps({"model": "gpt-4o-mini", "messages": messages}).encode()
    url = f"{served.url}/openai/v1/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer agent-key"}
    async with aiohttp.ClientSession() as session:
        # The parse memo hands the messages' dicts out again from the second
        # request, and the walker their segments from the third on: the
        # request after the reload gets the segments the third one inspected.
        for _ in range(3):
            async with session.post(url, data=body, headers=headers) as first:
                assert first.status == before[1], await first.text()
        served.write("teams/default.yaml", after[0])
        assert reload(served.app, served.config_dir)
        async with session.post(url, data=body, headers=headers) as then:
            answer = await then.text()
            assert then.status == after[1], answer
    assert SECRET not in answer
    decisions = [e["decision"] for e in _audited(served)]
    assert decisions == ["allow" if before[1] == 200 else "deny"] * 3 + [
        "allow" if after[1] == 200 else "deny"
    ]
