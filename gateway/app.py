"""The aiohttp application: shared resources in cleanup_ctx, routes, health.

What is built from the config (the guard, the reverse and A2A proxies, the
guardian) is one :class:`Generation`; a config reload (:func:`reload`)
builds the next and installs it in one step, so a request, which looks the
proxy up once, runs on one config from start to end. The resources opened
at start (the upstream session, the audit log, the review stores, the
listeners) live as long as the app.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import HttpVersion11, web

from gateway.config.loader import LoadedConfig
from gateway.config.reload import load_for_reload, pin_restart_keys
from gateway.guard.findings import Fingerprinter
from gateway.guard.guardian.judge import Guardian
from gateway.guard.guardian.llm import build_assessor
from gateway.guard.pipeline import Guard
from gateway.observe.audit import AuditLog, fingerprint_key, worker_path
from gateway.observe.metrics import CONTENT_TYPE_LATEST, Metrics
from gateway.peer import endpoint as reef_endpoint
from gateway.proxy import forward
from gateway.proxy.a2a import A2AProxy
from gateway.proxy.entrance import exchange_route
from gateway.proxy.middleware import LEDGER, Ledger
from gateway.proxy.origin import Origins
from gateway.proxy.reverse import ReverseProxy
from gateway.review.gate import Gate, Reviews
from gateway.review.store import StoreError

log = logging.getLogger("reefgate")

CONFIG = web.AppKey("config", LoadedConfig)
GUARD = web.AppKey("guard", Guard)
SESSION = web.AppKey("session", aiohttp.ClientSession)
# The reverse proxy's own connections to the upstreams (see `proxy/origin`).
ORIGINS = web.AppKey("origins", Origins)
AUDIT = web.AppKey("audit", AuditLog)
PROXY = web.AppKey("proxy", ReverseProxy)
METRICS = web.AppKey("metrics", Metrics)
REVIEWS = web.AppKey("reviews", Reviews)
GATE = web.AppKey("gate", Gate)
FORWARD = web.AppKey("forward", forward.ForwardProxy)
A2A = web.AppKey("a2a", A2AProxy)
# Which of `serve --workers N` this process is (1..N); 0 without --workers.
WORKER = web.AppKey("worker", int)
# Called with each config a reload installs (e.g. the admin listener's tokens).
ON_RELOAD = web.AppKey("on_reload", list[Callable[[LoadedConfig], None]])


@dataclass(frozen=True, slots=True)
class Generation:
    """One config and what was built from it; CONFIG, GUARD, PROXY and A2A are its parts."""

    config: LoadedConfig
    guard: Guard
    guardian: Guardian
    proxy: ReverseProxy
    a2a: A2AProxy


GENERATION = web.AppKey("generation", Generation)


def build_guard(config: LoadedConfig) -> Guard:
    """The guard for `config`, fingerprinting with the deployment's key (made on first start)."""
    key = fingerprint_key(config.gateway.audit, config.env)
    return Guard(config.gateway, config.teams, config.env, Fingerprinter(key))


def _new_session(config: LoadedConfig) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(
        limit=config.gateway.limits.upstream_connections,
        ttl_dns_cache=300,
        enable_cleanup_closed=True,
    )
    return aiohttp.ClientSession(
        connector=connector,
        # Bodies are relayed byte for byte, compressed or not, exactly as the
        # client asked for them; the client decompresses.
        auto_decompress=False,
        # Never add headers the client did not send (a gzip Accept-Encoding
        # would hand a client compressed bytes it did not ask for).
        skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
        timeout=aiohttp.ClientTimeout(total=None),
        cookie_jar=aiohttp.DummyCookieJar(),
    )


def _build(
    app: web.Application,
    config: LoadedConfig,
    guard: Guard,
    gate: Gate,
    previous: Generation | None = None,
) -> Generation:
    session = app[SESSION]
    guard.bind(session)
    guardian = Guardian(config, gate, guard.fingerprint, build_assessor(config, session))
    if previous is not None and (
        previous.config.gateway.guardian.breaker == config.gateway.guardian.breaker
    ):
        # Agents' turns keep their denials across a reload: a reload is no way out.
        guardian.breaker = previous.guardian.breaker
    proxy = ReverseProxy(config, guard, app[ORIGINS], app[METRICS], gate, guardian)
    return Generation(config, guard, guardian, proxy, A2AProxy(config, guard, session))


def _install(app: web.Application, generation: Generation) -> None:
    """Make `generation` the one new requests get: one synchronous step, no request between."""
    with warnings.catch_warnings():
        # aiohttp warns when a started app's state changes, as a handler that
        # read it once at startup would not see the change; the handlers here
        # look these up per request, which is the point.
        warnings.simplefilter("ignore", DeprecationWarning)
        app[GENERATION] = generation
        app[CONFIG] = generation.config
        app[GUARD] = generation.guard
        app[PROXY] = generation.proxy
        app[A2A] = generation.a2a


def reload(app: web.Application, config_dir: Path) -> bool:
    """Load `config_dir` again and, if it is valid, serve new requests with it.

    Requests in flight finish on the config they started with. Settings only
    read at start keep their running values and are logged as needing a
    restart (``gateway.config.reload``). Returns whether the new config was
    installed; if not, why is logged and the running one keeps serving.
    """
    new = load_for_reload(config_dir)
    return new is not None and apply_config(app, new)


def apply_config(app: web.Application, new: LoadedConfig) -> bool:
    """Install `new` as :func:`reload` does, once it is loaded and valid."""
    previous = app[GENERATION]
    try:
        config, restart = pin_restart_keys(previous.config, new, app[REVIEWS].urls)
        gate = app[GATE].on(app[REVIEWS].reconfigured(config))
        generation = _build(app, config, build_guard(config), gate, previous)
    except Exception as exc:
        log.error(
            "config reload from %s failed (%s: %s); still serving the running config",
            new.source,
            type(exc).__name__,
            exc,
        )
        return False
    for issue in restart:
        log.warning("config reload: %s", issue)
    _install(app, generation)
    app[LEDGER].upstreams = frozenset(config.gateway.upstreams)
    forward_proxy = app.get(FORWARD)
    if forward_proxy is not None:
        forward_proxy.settings = config.gateway.forward_proxy
    for hook in app[ON_RELOAD]:
        hook(config)
    log.info(
        "config reloaded from %s (upstreams: %s; teams: %s)",
        config.source,
        ", ".join(sorted(config.gateway.upstreams)),
        ", ".join(sorted(config.teams)) or "(none)",
    )
    return True


async def _resources(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG]
    audit_path = worker_path(config.gateway.audit.path, app[WORKER])
    audit = AuditLog(audit_path, fsync=config.gateway.audit.fsync)
    audit.open()
    reviews = Reviews(config)
    try:
        await reviews.open()
        gate = Gate(reviews)
        await gate.load()
    except BaseException:
        audit.close()
        raise
    session = _new_session(config)
    app[AUDIT] = audit
    app[SESSION] = session
    app[ORIGINS] = Origins(config.gateway.limits.upstream_connections)
    app[REVIEWS] = reviews
    app[GATE] = gate
    app[LEDGER] = Ledger(audit, app[METRICS], frozenset(config.gateway.upstreams))
    _install(app, _build(app, config, app[GUARD], gate))
    try:
        yield
    finally:
        await app[ORIGINS].close()
        await session.close()
        await reviews.close()
        audit.close()


async def _forward_proxy(app: web.Application) -> AsyncIterator[None]:
    """The forward proxy's listener, when enabled; its tunnels use this app's reverse proxy."""
    settings = app[CONFIG].gateway.forward_proxy
    if not settings.enabled:
        yield
        return

    async def handle(request: web.Request) -> web.StreamResponse:
        # Looked up per request: a config reload replaces it.
        return await app[PROXY].handle(request)

    async with forward.running(
        settings,
        handle=handle,
        ledger=app[LEDGER],
        metrics=app[METRICS],
        session=lambda: app[SESSION],
        client_max_size=app[CONFIG].gateway.limits.max_body_bytes,
        expect_handler=_expect,
        # `serve --workers N`: every worker listens on the port.
        reuse_port=app[WORKER] > 0,
    ) as proxy:
        app[FORWARD] = proxy
        yield


async def _healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _readyz(request: web.Request) -> web.Response:
    app = request.app
    session = app.get(SESSION)
    ready = PROXY in app and session is not None and not session.closed
    body: dict[str, object] = {
        "status": "ready" if ready else "starting",
        "config": app[CONFIG].source,
    }
    audit = app.get(AUDIT)
    if audit is not None and audit.failed is not None:
        ready = False
        body["status"] = "audit_failed"
    return web.json_response(body, status=200 if ready else 503)


# How long a scrape waits for the review stores to count what is pending.
PENDING_TIMEOUT_S = 2.0


async def _metrics(request: web.Request) -> web.Response:
    """Counters kept as plain ints on the hot path, and the pending reviews, read now."""
    app = request.app
    metrics = app[METRICS]
    metrics.sync_guard(app[GUARD])
    reviews = app.get(REVIEWS)
    pending: dict[str, int] | None = None
    if reviews is not None:
        try:
            async with asyncio.timeout(PENDING_TIMEOUT_S):
                pending = await reviews.pending_by_team()
        except (StoreError, TimeoutError) as exc:
            # The gauge is left out rather than stale; the scrape still answers.
            log.warning(
                "metrics: the review stores could not count pending reviews: %s",
                str(exc) or type(exc).__name__,
            )
    metrics.set_pending_reviews(pending)
    resp = web.Response(body=metrics.render())
    resp.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return resp


# The exchange routes' handlers return the handler's coroutine rather than
# await it: a coroutine of their own would be one more interpreted frame to
# resume at each of the request's turns of the event loop.
def _proxy(request: web.Request) -> Awaitable[web.StreamResponse]:
    return request.app[PROXY].handle(request)


def _a2a(request: web.Request) -> Awaitable[web.StreamResponse]:
    return request.app[A2A].handle(request)


async def _expect(request: web.Request) -> None:
    """`Expect: 100-continue` as aiohttp answers it; any other expectation is
    ignored (the header is not forwarded) where aiohttp would echo it in a 417."""
    if request.version == HttpVersion11 and request.headers["Expect"].lower() == "100-continue":
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0


def make_app(config: LoadedConfig, *, worker: int = 0) -> web.Application:
    app = web.Application(client_max_size=config.gateway.limits.max_body_bytes)
    app[CONFIG] = config
    app[WORKER] = worker
    app[ON_RELOAD] = []
    app[GUARD] = build_guard(config)
    app[METRICS] = Metrics()
    app.cleanup_ctx.append(_resources)
    app.cleanup_ctx.append(_forward_proxy)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    # The Reef endpoint's local API (/reef/v1/...) and its inbound pull task.
    reef_endpoint.install(app)
    # Agent-to-agent traffic (A2A) is matched before the LLM upstreams' catch-all.
    a2a = exchange_route(app, _a2a)
    app.router.add_route("*", "/a2a/{peer}{tail:(/.*)?}", a2a, name="a2a")
    app.router.add_route("*", "/a2a-in{tail:(/.*)?}", a2a, name="a2a_in")
    app.router.add_route(
        "*", "/{tail:.*}", exchange_route(app, _proxy), name="proxy", expect_handler=_expect
    )
    return app
