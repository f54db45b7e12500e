from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from aiohttp.web_runner import BaseRunner

from gateway.app import make_app
from gateway.config.loader import LoadedConfig
from gateway.config.models import Audit, GatewayConfig, Review, Team, Upstream
from gateway.proxy.server import GatewayRunner
from tests.fakes import FakeUpstream

AiohttpServer = Callable[..., Any]

# Property tests draw the same examples on every run (a CI run must not find
# a new case by chance) and have no per-example deadline (shared CPUs).
hypothesis.settings.register_profile(
    "reefgate", derandomize=True, database=None, deadline=None, print_blob=True
)
hypothesis.settings.load_profile("reefgate")


@dataclass
class Stack:
    gateway: TestServer
    upstream: FakeUpstream
    audit_path: Path

    @property
    def url(self) -> str:
        return str(self.gateway.make_url("")).rstrip("/")


def build_config(
    upstream_url: str,
    audit_path: Path,
    *,
    teams: Mapping[str, Team] | None = None,
    env: Mapping[str, str] | None = None,
    upstream_options: Mapping[str, Any] | None = None,
    **gateway: Any,
) -> LoadedConfig:
    opts = dict(upstream_options or {})
    upstreams = gateway.pop(
        "upstreams",
        {
            "openai": Upstream(base_url=upstream_url, **opts),
            "anthropic": Upstream(base_url=upstream_url, flavor="anthropic", **opts),
        },
    )
    gateway.setdefault("review", Review(store=f"sqlite:///{audit_path.parent / 'reviews.sqlite3'}"))
    return LoadedConfig(
        gateway=GatewayConfig(upstreams=upstreams, audit=Audit(path=audit_path), **gateway),
        teams=dict(teams) if teams is not None else {"default": Team(default=True)},
        source="tests",
        env=dict(env or {}),
    )


StackFactory = Callable[..., Any]


class GatewayTestServer(TestServer):
    """The gateway app behind the runner `reefgate serve` uses."""

    async def _make_runner(self, **kwargs: Any) -> BaseRunner:
        return GatewayRunner(self.app, **kwargs)


# The SDKs wait up to 10 minutes for an answer by default: a test whose
# gateway hangs fails after this instead of stalling the whole run.
SDK_TIMEOUT_S = 60.0


@pytest.fixture
async def _sdk_clients_closed(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """Every SDK client a test makes is closed before the test's event loop ends.

    An unclosed client is closed when it is garbage-collected, and that can
    happen in a later step of another test, on a socket number the kernel
    has since given to a new server's listening socket: that server then
    stops accepting (seen as a test hanging on a gateway that never answers).
    """
    import anthropic
    import openai

    made: list[Any] = []
    for cls in (openai.AsyncOpenAI, anthropic.AsyncAnthropic):
        original = cls.__init__

        def init(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> None:
            __original(self, *args, **kwargs)
            made.append(self)

        monkeypatch.setattr(cls, "__init__", init)
    yield
    for client in made:
        await client.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Only async tests make SDK clients; sync ones need no event loop for this.
    for item in items:
        test = getattr(item, "obj", None)
        if test is not None and inspect.iscoroutinefunction(test):
            item.fixturenames.append("_sdk_clients_closed")  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _sdk_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    import anthropic._base_client
    import httpx2
    import openai._base_client

    timeout = httpx2.Timeout(SDK_TIMEOUT_S, connect=5.0)
    monkeypatch.setattr(openai._base_client, "DEFAULT_TIMEOUT", timeout)
    monkeypatch.setattr(anthropic._base_client, "DEFAULT_TIMEOUT", timeout)


@pytest.fixture
async def make_stack(aiohttp_server: AiohttpServer, tmp_path: Path) -> AsyncIterator[StackFactory]:
    servers: list[TestServer] = []

    async def factory(
        fake: FakeUpstream | None = None, *, name: str = "audit", **kwargs: Any
    ) -> Stack:
        # Stacks of one test share tmp_path, and the review store by default;
        # a second stack needs its own audit log (one writer per file).
        fake = fake or FakeUpstream()
        upstream_server = await aiohttp_server(fake.app())
        audit_path = tmp_path / f"{name}.jsonl"
        config = build_config(str(upstream_server.make_url("")).rstrip("/"), audit_path, **kwargs)
        app: web.Application = make_app(config)
        server = GatewayTestServer(app)
        await server.start_server()
        servers.append(server)
        return Stack(server, fake, audit_path)

    yield factory
    for server in servers:
        await server.close()


@pytest.fixture
async def stack(make_stack: StackFactory) -> Stack:
    result: Stack = await make_stack()
    return result
