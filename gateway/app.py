"""The aiohttp application: shared resources in cleanup_ctx, routes, health."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import HttpVersion11, web

from gateway.config.loader import LoadedConfig
from gateway.guard.findings import Fingerprinter
from gateway.guard.guardian.judge import Guardian
from gateway.guard.guardian.llm import build_assessor
from gateway.guard.pipeline import Guard
from gateway.observe.audit import AuditLog, fingerprint_key
from gateway.observe.metrics import CONTENT_TYPE_LATEST, Metrics
from gateway.proxy import forward
from gateway.proxy.a2a import A2AProxy
from gateway.proxy.middleware import LEDGER, MIDDLEWARES, Ledger
from gateway.proxy.reverse import ReverseProxy
from gateway.review.gate import Gate, Reviews
from gateway.review.store import StoreError

log = logging.getLogger("reefgate")

CONFIG = web.AppKey("config", LoadedConfig)
GUARD = web.AppKey("guard", Guard)
SESSION = web.AppKey("session", aiohttp.ClientSession)
AUDIT = web.AppKey("audit", AuditLog)
PROXY = web.AppKey("proxy", ReverseProxy)
METRICS = web.AppKey("metrics", Metrics)
REVIEWS = web.AppKey("reviews", Reviews)
GATE = web.AppKey("gate", Gate)
FORWARD = web.AppKey("forward", forward.ForwardProxy)
A2A = web.AppKey("a2a", A2AProxy)


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


async def _resources(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG]
    audit = AuditLog(config.gateway.audit.path, fsync=config.gateway.audit.fsync)
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
    app[GUARD].bind(session)
    app[AUDIT] = audit
    app[SESSION] = session
    app[REVIEWS] = reviews
    app[GATE] = gate
    app[LEDGER] = Ledger(audit, app[METRICS], frozenset(config.gateway.upstreams))
    guardian = Guardian(config, gate, app[GUARD].fingerprint, build_assessor(config, session))
    app[PROXY] = ReverseProxy(config, app[GUARD], session, app[METRICS], gate, guardian)
    app[A2A] = A2AProxy(config, app[GUARD], session)
    try:
        yield
    finally:
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
        return await app[PROXY].handle(request)

    async with forward.running(
        settings,
        handle=handle,
        ledger=app[LEDGER],
        metrics=app[METRICS],
        session=lambda: app[SESSION],
        client_max_size=app[CONFIG].gateway.limits.max_body_bytes,
        expect_handler=_expect,
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


async def _proxy(request: web.Request) -> web.StreamResponse:
    return await request.app[PROXY].handle(request)


async def _a2a(request: web.Request) -> web.StreamResponse:
    return await request.app[A2A].handle(request)


async def _expect(request: web.Request) -> None:
    """`Expect: 100-continue` as aiohttp answers it; any other expectation is
    ignored (the header is not forwarded) where aiohttp would echo it in a 417."""
    if request.version == HttpVersion11 and request.headers["Expect"].lower() == "100-continue":
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0


def make_app(config: LoadedConfig) -> web.Application:
    app = web.Application(
        client_max_size=config.gateway.limits.max_body_bytes, middlewares=MIDDLEWARES
    )
    app[CONFIG] = config
    app[GUARD] = build_guard(config)
    app[METRICS] = Metrics()
    app.cleanup_ctx.append(_resources)
    app.cleanup_ctx.append(_forward_proxy)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    # Agent-to-agent traffic (A2A) is matched before the LLM upstreams' catch-all.
    app.router.add_route("*", "/a2a/{peer}{tail:(/.*)?}", _a2a, name="a2a")
    app.router.add_route("*", "/a2a-in{tail:(/.*)?}", _a2a, name="a2a_in")
    app.router.add_route("*", "/{tail:.*}", _proxy, name="proxy", expect_handler=_expect)
    return app
