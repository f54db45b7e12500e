"""The reverse proxy: `/<upstream>/<rest>` -> `upstreams.<upstream>.base_url + /<rest>`.

Order is the security property: the whole body is read, parsed and judged
before a single byte goes upstream. Responses are relayed as they arrive.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from gateway.config.loader import LoadedConfig
from gateway.config.models import Flavor
from gateway.config.teams import TeamMatch, TeamResolver
from gateway.errors import (
    BadRequest,
    NotFound,
    RequestError,
    TooLarge,
    Unauthorized,
    UpstreamError,
)
from gateway.guard.decision import Decision
from gateway.guard.detectors import secrets
from gateway.guard.pipeline import Guard
from gateway.guard.verdict import GUARD_FAILURE
from gateway.observe.audit import AuditLog
from gateway.observe.metrics import Metrics
from gateway.proxy.upstream import request_headers, response_headers
from gateway.wire.base import Segment, Trust
from gateway.wire.body import decode_content, request_segments, require_json
from gateway.wire.errors import error_body, stream_error_event

log = logging.getLogger("reefgate.access")
guard_log = logging.getLogger("reefgate.guard")

_JSON = "application/json"


@dataclass(frozen=True, slots=True)
class Route:
    name: str
    base_url: str
    flavor: Flavor
    custody_key: str | None
    timeout: aiohttp.ClientTimeout


def _routes(config: LoadedConfig) -> dict[str, Route]:
    out = {}
    for name, up in config.gateway.upstreams.items():
        out[name] = Route(
            name=name,
            base_url=up.base_url,
            flavor=up.resolved_flavor(name),
            custody_key=config.env.get(up.api_key_env) if up.api_key_env else None,
            timeout=aiohttp.ClientTimeout(
                total=None,
                connect=up.connect_timeout_s,
                sock_connect=up.connect_timeout_s,
                sock_read=up.read_timeout_s,
            ),
        )
    return out


def _split(raw_path: str) -> tuple[str, str, str]:
    """(upstream name, rest of the path as sent, query) from the raw request target."""
    path, _, query = raw_path.partition("?")
    name, slash, rest = path[1:].partition("/")
    return name, slash + rest, query


def _check_path(rest: str) -> str:
    """The decoded path used for routing; dot segments are refused.

    The upstream may normalise `..` after we choose an adapter by path, so a
    path with dot segments could be judged as one endpoint and served as another.
    """
    decoded = unquote(rest)
    for part in decoded.split("/"):
        if part in (".", ".."):
            raise BadRequest(
                "request path must not contain '.' or '..' segments", code="invalid_path"
            )
    return decoded


def _log_failure(logger: logging.Logger, what: str, exc: BaseException, request_id: str) -> None:
    # The message of an exception raised while handling a payload may quote
    # it, so only the type and the code locations are logged.
    where = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("%s failed on %s: %s\n%s", what, request_id, type(exc).__name__, where)


def _guard_failed(exc: Exception, request_id: str) -> Decision:
    _log_failure(guard_log, "guard path", exc, request_id)
    return Decision("deny", GUARD_FAILURE, "the guard could not check this request")


class _RequestIds:
    """Unique ids: a random per-process prefix and a counter, cheaper than uuid4 per request."""

    __slots__ = ("_n", "_prefix")

    def __init__(self) -> None:
        self._prefix = os.urandom(8).hex()
        self._n = 0

    def next(self) -> str:
        self._n += 1
        return f"{self._prefix}{self._n:016x}"


class ReverseProxy:
    # How often a failed audit log is reopened while requests are refused.
    audit_retry_s = 1.0

    def __init__(
        self,
        config: LoadedConfig,
        guard: Guard,
        audit: AuditLog,
        session: aiohttp.ClientSession,
        metrics: Metrics,
    ) -> None:
        self._config = config
        self._guard = guard
        self._audit = audit
        self._session = session
        self._metrics = metrics
        self._routes = _routes(config)
        self._teams = TeamResolver(config)
        self._limit = config.gateway.limits.max_body_bytes
        self._ids = _RequestIds()
        self._audit_retry_at = 0.0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        request_id = self._ids.next()
        name, rest, query = _split(request.raw_path)
        if self._audit.failed is not None and not self._audit_recovered():
            # Fail closed: what cannot be audited is not forwarded.
            route = self._routes.get(name)
            log.error("refused %s: the audit log cannot be written", request_id)
            return self._error(
                route.flavor if route is not None else "openai",
                503,
                "reefgate cannot write its audit log; requests are refused until it can",
                "audit_unavailable",
                request_id,
            )
        record: dict[str, Any] = {
            "request_id": request_id,
            "method": request.method,
            "upstream": name,
            "path": rest,
            "team": None,
            "decision": "allow",
            "category": "none",
        }
        flavor: Flavor = "openai"
        path_checked = allowed = False
        try:
            route = self._routes.get(name)
            if route is None:
                raise NotFound(
                    f"no upstream named {secrets.unless_secret(name)!r}; "
                    f"configured: {', '.join(self._routes)}"
                )
            flavor = route.flavor
            match = self._teams.resolve(request.headers, request.remote)
            if match is None:
                raise Unauthorized("no team matches this request and no default team is configured")
            record["team"] = match.name
            if match.team.upstreams is not None and route.name not in match.team.upstreams:
                return self._refuse(
                    record,
                    flavor,
                    request_id,
                    Decision(
                        "deny",
                        "upstream_not_allowed",
                        f"team {match.name} may not use {route.name}",
                    ),
                )
            api_path = _check_path(rest)
            body = await self._read_body(request)
            content_type = request.headers.get("Content-Type")
            if body:
                require_json(api_path, content_type)
            policy = self._guard.policy(match.name)
            record["policy_version"] = policy.policy_version
            try:
                # Repeated headers are one list to the upstream (RFC 9110, 5.3),
                # so they are read as one here: "identity" then "gzip" is refused.
                encoding = ", ".join(request.headers.getall("Content-Encoding", ()))
                decoded = decode_content(body, encoding, self._limit)
                segments, payload = request_segments(api_path, query, content_type, decoded)
                segments.insert(0, Segment("path", "path", api_path, Trust.OPAQUE))
                model = payload.get("model") if isinstance(payload, dict) else None
                destination = f"{route.name}:{model}" if isinstance(model, str) else route.name
                decision = await self._guard.check(
                    segments, policy, f"team:{match.name}", destination
                )
                path_checked = True
            except RequestError:
                raise
            except Exception as exc:
                # A bug or an exhausted resource in parsing or a detector: the
                # request is denied like any other guard failure, and visibly so.
                decision = _guard_failed(exc, request_id)
            self._metrics.latency.observe(time.perf_counter() - started)
            if decision.action != "allow":
                if any(e.where.startswith("path") for e in decision.evidence):
                    record["path"] = secrets.REDACTED
                return self._refuse(record, flavor, request_id, decision)
            allowed = True
            return await self._forward(request, route, match, rest, query, body, record, request_id)
        except RequestError as exc:
            record["decision"] = "error"
            record["category"] = exc.code
            record["status"] = exc.status
            return self._error(flavor, exc.status, exc.message, exc.code, request_id)
        except UpstreamError as exc:
            record["status"] = exc.status
            record["outcome"] = exc.code
            return self._error(flavor, exc.status, exc.message, exc.code, request_id)
        except asyncio.CancelledError:
            record["outcome"] = "client_closed"
            raise
        except Exception as exc:
            # A bug outside the guard path: nothing unchecked has gone upstream,
            # the audit entry must not read as a plain success, and the client
            # gets an error it can parse.
            record["status"] = 500
            record["outcome"] = "internal_error"
            if not allowed:
                record["decision"] = "error"
                record["category"] = "internal_error"
            if record.get("stream"):
                raise  # headers are sent; aiohttp can only cut the connection
            _log_failure(log, "request handling", exc, request_id)
            return self._error(
                flavor, 500, "reefgate failed to handle this request", "internal_error", request_id
            )
        finally:
            record["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
            if not path_checked:
                # Refused before the outbound check read the path: it may hold
                # a secret, which must not reach the audit file.
                record["path"] = secrets.unless_secret(record["path"])
                record["upstream"] = secrets.unless_secret(name)
            self._write_audit(record)

    async def _read_body(self, request: web.Request) -> bytes:
        if not request.body_exists:
            return b""
        declared = request.content_length
        if declared is not None and declared > self._limit:
            raise TooLarge(f"request body of {declared} bytes exceeds the limit of {self._limit}")
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge as exc:
            raise TooLarge(f"request body exceeds the limit of {self._limit} bytes") from exc

    def _refuse(
        self, record: dict[str, Any], flavor: Flavor, request_id: str, decision: Decision
    ) -> web.Response:
        record["decision"] = decision.action
        record["category"] = decision.category
        record["status"] = 403
        record["findings"] = [
            {"kind": e.kind, "fingerprint": e.fingerprint, "where": e.where}
            for e in decision.evidence
        ]
        if decision.action == "review":
            message = f"reefgate is holding this request for review: {decision.reason}"
        else:
            message = f"reefgate blocked this request ({decision.category}): {decision.reason}"
        resp = self._error(flavor, 403, message, decision.category, request_id)
        resp.headers["x-reefgate-decision"] = decision.action
        resp.headers["x-reefgate-category"] = decision.category
        return resp

    @staticmethod
    def _error(
        flavor: Flavor, status: int, message: str, code: str, request_id: str
    ) -> web.Response:
        return web.Response(
            status=status,
            body=error_body(flavor, status, message, code),
            content_type=_JSON,
            headers={"x-reefgate-request-id": request_id},
        )

    async def _forward(
        self,
        request: web.Request,
        route: Route,
        match: TeamMatch,
        rest: str,
        query: str,
        body: bytes,
        record: dict[str, Any],
        request_id: str,
    ) -> web.StreamResponse:
        custody = route.custody_key
        team_cred = match.team.credentials.get(route.name)
        if team_cred is not None:
            custody = self._config.env.get(team_cred.api_key_env)
        headers = request_headers(
            request.headers,
            flavor=route.flavor,
            custody_key=custody,
            strip_credentials=match.by_key,
        )
        target = route.base_url + rest + ("?" + query if query else "")
        upstream_started = time.perf_counter()
        try:
            async with self._session.request(
                request.method,
                URL(target, encoded=True),
                headers=headers,
                data=body if body else None,
                allow_redirects=False,
                timeout=route.timeout,
            ) as upstream:
                record["upstream_status"] = upstream.status
                record["status"] = upstream.status
                out_headers = response_headers(upstream.headers)
                out_headers["x-reefgate-request-id"] = request_id
                out_headers["x-reefgate-decision"] = "allow"
                content_type = upstream.headers.get("Content-Type", "")
                is_sse = content_type.startswith("text/event-stream")
                if upstream.content_length is not None and not is_sse:
                    data = await upstream.read()
                    record["upstream_ms"] = round(
                        (time.perf_counter() - upstream_started) * 1000, 3
                    )
                    return web.Response(status=upstream.status, body=data, headers=out_headers)
                return await self._relay(
                    request, upstream, out_headers, route.flavor, is_sse, record
                )
        except TimeoutError as exc:
            raise UpstreamError(
                f"upstream {route.name} timed out", status=504, code="upstream_timeout"
            ) from exc
        except aiohttp.ClientError as exc:
            raise UpstreamError(
                f"upstream {route.name} is unreachable ({type(exc).__name__})",
                status=502,
                code="upstream_unreachable",
            ) from exc

    async def _relay(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        headers: CIMultiDict[str],
        flavor: Flavor,
        is_sse: bool,
        record: dict[str, Any],
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=upstream.status, headers=headers)
        try:
            await response.prepare(request)
            record["stream"] = True
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            except ConnectionResetError:
                # aiohttp's error for writing to a client that has gone is also
                # a ClientError; it is not the upstream's failure.
                raise
            except (aiohttp.ClientError, TimeoutError) as exc:
                # Headers are gone already: the client gets a well-formed error
                # event instead of a silent truncation or a hang.
                record["outcome"] = "upstream_failed_mid_stream"
                log.warning("upstream failed mid-stream: %s", type(exc).__name__)
                if is_sse:
                    await response.write(
                        stream_error_event(
                            flavor, "upstream connection failed mid-stream", "upstream_error"
                        )
                    )
            await response.write_eof()
        except ConnectionResetError:
            record["outcome"] = "client_closed"
        return response

    def _audit_recovered(self) -> bool:
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

    def _write_audit(self, record: dict[str, Any]) -> None:
        upstream = record["upstream"] if record["upstream"] in self._routes else "unknown"
        self._metrics.count_request(upstream, record["decision"], record["category"])
        try:
            self._audit.append("request", record)
        except Exception:
            # The response is already decided; a broken audit must not turn into
            # a crashed handler. It is logged loudly, /readyz reports it, and
            # later requests are refused until the log can be reopened.
            log.exception("audit write failed")
        # The audit already records every request; the access log line is for
        # debugging and costs nothing when the level is above DEBUG.
        if not log.isEnabledFor(logging.DEBUG):
            return
        log.debug(
            "%s /%s%s -> %s %s/%s %.1fms team=%s",
            record["method"],
            record["upstream"],
            record["path"],
            record.get("status"),
            record["decision"],
            record["category"],
            record["latency_ms"],
            record["team"],
        )
