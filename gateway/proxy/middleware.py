"""What every exchange goes through, kept out of the handlers.

Three steps, outermost first, in `serve_exchange` (routes take it through
`gateway.proxy.entrance.exchange_route`; the gateway's own endpoints do not):

- the request's id: opens the request's :class:`Exchange`, stamps
  ``x-reefgate-request-id`` on its answer and puts the id on every log line
  logged meanwhile (``gateway.observe.logs.REQUEST_ID``);
- its audit entry: refuses requests while the audit log cannot be written
  (what cannot be audited is not forwarded) and writes each request's entry
  when it ends, however it ends, before its answer leaves (a streamed
  answer's entry, once it has); the entries of requests that end in the
  same turn of the event loop go in one write;
- its errors: turns the exceptions of the steps (bad input, a refusal, an
  upstream failure, a bug) into an answer in the provider's own error shape,
  and records on the exchange what happened.

A handler behind them only resolves, reads, inspects and forwards.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web

from gateway.errors import Held, Refused, RequestError, RequestTimeout, UpstreamError
from gateway.guard.decision import Decision
from gateway.observe.audit import AuditLog
from gateway.observe.logs import REQUEST_ID, log_failure
from gateway.observe.metrics import NO_TEAM, Metrics
from gateway.proxy.exchange import Exchange, Phase
from gateway.proxy.turns import TURN
from gateway.wire.errors import Flavor, error_body

log: Final = logging.getLogger("reefgate.access")

EXCHANGE: Final = web.RequestKey("exchange", Exchange)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class _RequestIds:
    """Unique ids: a random per-process prefix and a counter, cheaper than uuid4 per request."""

    __slots__ = ("_n", "_prefix")

    def __init__(self) -> None:
        self._prefix = os.urandom(8).hex()
        self._n = 0

    def next(self) -> str:
        self._n += 1
        return f"{self._prefix}{self._n:016x}"


class Ledger:
    """Request ids, the audit log and the request counter, shared by every entrance."""

    # How often a failed audit log is reopened while requests are refused.
    audit_retry_s = 1.0

    def __init__(self, audit: AuditLog, metrics: Metrics, upstreams: frozenset[str]) -> None:
        self._audit = audit
        self._metrics = metrics
        # Upstream names counted by name in metrics (others as unknown); a reload sets it.
        self.upstreams = upstreams
        self._ids = _RequestIds()
        self._audit_retry_at = 0.0
        # Requests inside `audit_entries`, and whether a write of the kept
        # entries is due in this turn of the event loop.
        self.in_flight = 0
        self._flush_due = False

    def open(self, request: web.BaseRequest) -> Exchange:
        path, _, query = request.raw_path.partition("?")
        intercepted = getattr(request.protocol, "intercepted", None)
        if isinstance(intercepted, str):
            # Inside an intercepted tunnel the upstream is the host the agent
            # connected to, and the path is the API's own.
            return Exchange(self._ids.next(), request.method, intercepted, path, query)
        name, slash, rest = path[1:].partition("/")
        return Exchange(self._ids.next(), request.method, name, slash + rest, query)

    def writable(self) -> bool:
        """Whether entries can be written, reopening a failed log at most once per retry period."""
        if self._audit.failed is None:
            return True
        now = time.monotonic()
        if now < self._audit_retry_at:
            return False
        self._audit_retry_at = now + self.audit_retry_s
        try:
            self._audit.reopen()
        except OSError as exc:
            log.error("audit log still cannot be opened: %s", type(exc).__name__)
            return False
        log.warning("audit log reopened after a failed write")
        return True

    def record(self, exchange: Exchange, *, defer: bool = False) -> None:
        """Count the request and write its entry; with ``defer``, in this turn's write.

        A deferred entry is written by a callback scheduled now, so it runs
        before anything the caller schedules after this call; the entries
        deferred in one turn of the event loop are encoded and written
        together (`AuditLog.keep`).
        """
        metrics = self._metrics
        upstream = exchange.upstream if exchange.upstream in self.upstreams else "unknown"
        team = exchange.team.name if exchange.team is not None else NO_TEAM
        decision, category = exchange.decision, exchange.category
        metrics.count_request(upstream, decision, category, team)
        if exchange.upstream_ms is not None:
            metrics.observe_upstream(upstream, exchange.upstream_ms / 1000)
        for judged in exchange.tool_calls:
            metrics.count_tool_call(str(judged["outcome"]), str(judged["rule"]))
            if judged.get("breaker") == "tripped":
                metrics.count_breaker_trip()
        try:
            if not defer:
                self._audit.append("request", exchange.audit_record())
            else:
                self._audit.keep("request", exchange.audit_record())
                if not self._flush_due:
                    self._flush_due = True
                    asyncio.get_running_loop().call_soon(self._flush)
        except Exception as exc:
            # The answer is already decided; a broken audit must not crash the
            # handler. /readyz reports it, and later requests are refused until
            # the log can be reopened.
            log_failure(log, "audit write", exc, exchange.request_id)
        # The access line: only what the audit entry shows as is (never the path).
        # Asked first: `debug` asks the same, one Python call deeper.
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "request %s: team %s, %s, %s/%s, status %s",
                exchange.request_id,
                team,
                upstream,
                decision,
                category,
                exchange.status,
            )

    def _flush(self) -> None:
        self._flush_due = False
        try:
            self._audit.flush()
        except Exception as exc:
            log_failure(log, "audit write", exc)

    def note(self, kind: str, payload: dict[str, object]) -> None:
        """An audit entry that is not a request's: a forward-proxy tunnel decided."""
        try:
            self._audit.append(kind, payload)
        except Exception as exc:
            log_failure(log, "audit write", exc)


LEDGER: Final = web.AppKey("ledger", Ledger)


def error_response(flavor: Flavor, status: int, message: str, code: str) -> web.Response:
    return web.Response(
        status=status,
        body=error_body(flavor, status, message, code),
        content_type="application/json",
    )


def refusal(exchange: Exchange, decision: Decision) -> web.Response:
    exchange.verdict = decision
    exchange.status = 403
    if decision.action == "review":
        message = f"reefgate is holding this request for review: {decision.reason}"
    else:
        message = f"reefgate blocked this request ({decision.category}): {decision.reason}"
    response = error_response(exchange.flavor, 403, message, decision.category)
    response.headers["x-reefgate-decision"] = decision.action
    response.headers["x-reefgate-category"] = decision.category
    if exchange.review_id is not None:
        response.headers["x-reefgate-review-id"] = exchange.review_id
    return response


def held(exchange: Exchange, review_id: str, reason: str) -> web.Response:
    """The answer to a request waiting for a reviewer: the same request passes once approved."""
    exchange.status = 403
    exchange.review_id = review_id
    message = (
        f"reefgate is holding this request for review {review_id}: {reason}; "
        "send the same request again once a reviewer has approved it"
    )
    response = error_response(exchange.flavor, 403, message, "review_pending")
    response.headers["x-reefgate-decision"] = "review"
    response.headers["x-reefgate-category"] = "review_pending"
    response.headers["x-reefgate-review-id"] = review_id
    return response


async def serve_exchange(
    request: web.Request, ledger: Ledger, handler: Handler
) -> web.StreamResponse:
    """One exchange through its three steps (see the module's doc) to ``handler``.

    Outermost first: the request's id, its audit entry, its errors in the
    provider's shape. Each step gets the exchange and the ledger from its
    caller rather than from the request's mapping.
    """
    exchange = ledger.open(request)
    request[EXCHANGE] = exchange
    # Every line logged while the request is handled carries its id, from
    # the tasks it starts too (they copy the context).
    token = REQUEST_ID.set(exchange.request_id)
    try:
        response = await _audited(request, exchange, ledger, handler)
    finally:
        REQUEST_ID.reset(token)
    if not response.prepared:
        # A streamed answer carries it from the handler, set before its headers went out.
        response.headers["x-reefgate-request-id"] = exchange.request_id
    return response


async def _audited(
    request: web.Request, exchange: Exchange, ledger: Ledger, handler: Handler
) -> web.StreamResponse:
    if not ledger.writable():
        log.error("refused %s: the audit log cannot be written", exchange.request_id)
        exchange.error = "audit_unavailable"
        exchange.status = 503
        return error_response(
            exchange.flavor,
            503,
            "reefgate cannot write its audit log; requests are refused until it can",
            "audit_unavailable",
        )
    ledger.in_flight += 1
    deferred = False
    try:
        response = await _answered(request, exchange, handler)
    finally:
        ledger.in_flight -= 1
        # With other requests in flight, their entries and this one likely
        # end in the same turn of the loop: one write for all of them. (The
        # kernel's path for a small write to a file cost more under load
        # than the rest of the entry.) A lone request writes at once.
        deferred = ledger.in_flight > 0
        ledger.record(exchange, defer=deferred)
    if deferred and not response.prepared:
        # The write was scheduled before this turn: the answer leaves after
        # it. (A streamed answer has left already; its entry follows it.)
        await TURN
    return response


async def _answered(
    request: web.Request, exchange: Exchange, handler: Handler
) -> web.StreamResponse:
    try:
        return await handler(request)
    except Refused as exc:
        return refusal(exchange, exc.decision)
    except Held as exc:
        return held(exchange, exc.review_id, exc.reason)
    except RequestError as exc:
        exchange.error = exc.code
        exchange.status = exc.status
        response = error_response(exchange.flavor, exc.status, exc.message, exc.code)
        if isinstance(exc, RequestTimeout):
            # The client stopped sending: answer, then close at once rather
            # than linger for the rest of a body that is not coming.
            response.headers["x-reefgate-request-id"] = exchange.request_id
            response.force_close()
            await response.prepare(request)
            await response.write_eof()
            request.protocol.force_close()
        return response
    except UpstreamError as exc:
        exchange.status = exc.status
        exchange.outcome = exc.code
        return error_response(exchange.flavor, exc.status, exc.message, exc.code)
    except asyncio.CancelledError:
        exchange.outcome = "client_closed"
        raise
    except Exception as exc:
        # A bug outside the guard path: nothing unchecked has gone upstream,
        # the entry must not read as a plain success, and the client gets an
        # error it can parse.
        exchange.status = 500
        exchange.outcome = "internal_error"
        if exchange.phase < Phase.CHECKED:
            exchange.error = "internal_error"
        log_failure(log, "request handling", exc, exchange.request_id)
        if exchange.phase is Phase.STREAMING:
            raise  # the headers are sent; aiohttp can only cut the connection
        return error_response(
            exchange.flavor, 500, "reefgate failed to handle this request", "internal_error"
        )
