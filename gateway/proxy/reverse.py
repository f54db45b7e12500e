"""The reverse proxy: `/<upstream>/<rest>` -> `upstreams.<upstream>.base_url + /<rest>`.

Order is the security property: the whole body is read, parsed and judged
before a single byte goes upstream. A request takes four steps on its
:class:`Exchange` (resolve, read, inspect, forward); request ids, the audit
entry and error answers are the middlewares' (gateway.proxy.middleware).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, Protocol, TypeVar
from urllib.parse import unquote

import aiohttp
from aiohttp import StreamReader, web
from aiohttp.http_exceptions import HttpProcessingError
from multidict import CIMultiDict

from gateway.canonical import sha256_hex
from gateway.config.loader import LoadedConfig
from gateway.config.models import Team
from gateway.config.teams import TeamMatch, TeamResolver
from gateway.errors import (
    BadRequest,
    Held,
    NotFound,
    Refused,
    RequestError,
    RequestTimeout,
    TooLarge,
    Unauthorized,
    UpstreamError,
)
from gateway.guard.decision import Decision, Evidence
from gateway.guard.floor import shown
from gateway.guard.guardian.judge import Guardian
from gateway.guard.pipeline import Inspection, TeamPolicy
from gateway.guard.redact import StreamRedactor, redact
from gateway.guard.verdict import GUARD_FAILURE
from gateway.observe.logs import log_failure
from gateway.observe.metrics import Metrics
from gateway.proxy.exchange import METHODS, Exchange, Phase, Route, ms
from gateway.proxy.middleware import EXCHANGE
from gateway.proxy.origin import Origin, Origins
from gateway.proxy.relay import (
    compressed,
    edited_body,
    end_stream,
    may_hold_calls,
    read_bounded,
    relay_raw,
    relay_stream,
)
from gateway.proxy.turns import TURN
from gateway.proxy.upstream import (
    add_custody,
    header_segments,
    path_segment,
    request_headers,
    response_headers,
)
from gateway.review.gate import Gate, ReviewCapacity
from gateway.review.model import Finding as ReviewFinding
from gateway.review.model import Review, approval_digest, pending
from gateway.wire import body as wire_body
from gateway.wire.base import Segment, Trust
from gateway.wire.body import decode_content, require_json
from gateway.wire.errors import stream_error_event
from gateway.wire.replies.base import FilterFactory, Rewrite

log = logging.getLogger("reefgate.access")
guard_log: Final = logging.getLogger("reefgate.guard")


def _routes(config: LoadedConfig) -> dict[str, Route]:
    out = {}
    for name, up in config.gateway.upstreams.items():
        out[name] = Route(
            name=name,
            base_url=up.base_url,
            flavor=up.resolved_flavor(name),
            custody_key=config.env.get(up.api_key_env) if up.api_key_env else None,
            origin=Origin.parse(up.base_url, up.connect_timeout_s, up.read_timeout_s),
            key_kinds=up.resolved_key_kinds(name),
        )
    return out


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


def _upstream_target(route: Route, path: str, query: str) -> str:
    # The path and query go on exactly as sent, percent-encoding included;
    # `/openai` alone asks for the base URL's path, or `/`.
    return (route.origin.base_path + path or "/") + ("?" + query if query else "")


T = TypeVar("T")


async def _bounded(awaitable: Awaitable[T], deadline: float) -> T:
    """``awaitable``, cancelled with TimeoutError once ``deadline`` (monotonic) passes."""
    async with asyncio.timeout(deadline - time.monotonic()):
        return await awaitable


def _is_upgrade(request: web.Request) -> bool:
    """A protocol switch (WebSocket for the Realtime API, h2c): its frames would go unread."""
    if "Upgrade" in request.headers:
        return True
    connection = request.headers.get("Connection", "").lower()
    # Most values ("keep-alive", or none) cannot hold the token: no generator for them.
    return "upgrade" in connection and any(t.strip() == "upgrade" for t in connection.split(","))


_UPGRADE_REFUSED: Final = Decision(
    "deny",
    "upgrade_refused",
    "reefgate does not inspect WebSocket or other upgraded connections (such as the "
    "Realtime API) yet; use the HTTP API",
)


# The request's steps hand each other plain classes with an __init__ of their
# own, not dataclasses: a dataclass's generated __init__ is Python code, which
# this compiled module would run several times a request.
class _Target:
    """Where a request goes and for whom: what resolving it found."""

    __slots__ = ("api_path", "route", "team")

    def __init__(self, route: Route, team: TeamMatch, api_path: str) -> None:
        self.route = route
        self.team = team
        # The upstream-relative path, decoded, as adapters are chosen by.
        self.api_path = api_path


class _Outgoing:
    """The request as it will go upstream once the verdict allows it."""

    __slots__ = ("body", "destination", "headers", "held", "payload", "route", "stream", "team")

    def __init__(
        self,
        route: Route,
        team: TeamMatch,
        headers: CIMultiDict[str],
        body: bytes,
        held: Review | None,
        stream: bool,
        payload: object,
        destination: str,
    ) -> None:
        self.route = route
        self.team = team
        self.headers = headers
        self.body = body
        # The pending review holding it, if any.
        self.held = held
        # Whether the client asked for a streamed answer.
        self.stream = stream
        # The parsed request, whose conversation the guardian reads to judge
        # the answer's tool calls; and the destination the outbound check judged.
        self.payload = payload
        self.destination = destination


# An LLM request is one proposal going out, whichever check held it.
_DIRECTION: Final = "outbound"

# Seconds between the comments that keep a held streamed request's connection alive.
HEARTBEAT_S = 5.0


class _Reviewed:
    """What a review of this request is bound to."""

    __slots__ = ("body", "destination", "policy_version", "source", "team")

    def __init__(
        self, team: str, source: str, destination: str, body: object, policy_version: str
    ) -> None:
        self.team = team
        self.source = source
        self.destination = destination
        self.body = body
        self.policy_version = policy_version

    def digest(self) -> str:
        return approval_digest(
            source=self.source,
            destination=self.destination,
            direction=_DIRECTION,
            body=self.body,
            policy_version=self.policy_version,
        )


def _is_stream(payload: object, query: str) -> bool:
    if isinstance(payload, dict) and payload.get("stream") is True:
        return True
    # A stored response fetched back as a stream: GET /v1/responses/{id}?stream=true.
    return bool(query) and any(p.lower() in ("stream=true", "stream=1") for p in query.split("&"))


def _gated(review: Review) -> Decision:
    """The decision a review stands for, pending or denied."""
    if review.status == "pending":
        return Decision("review", review.category, review.reason)
    return Decision("deny", "review_denied", f"a reviewer denied this request ({review.id})")


# A request's segments and parsed JSON, read through a module attribute: both
# modules are compiled together, and a compiled call to a function of the
# group is direct, where `bench/ablated.py` must be able to replace it.
request_segments: Callable[[str, str, str | None, bytes], tuple[list[Segment], object | None]] = (
    wire_body.request_segments
)


def _approved(review: Review) -> Decision:
    return Decision("allow", "none", f"approved by a reviewer ({review.id})")


class Checks(Protocol):
    """What the handler asks of the guard (`gateway.guard.pipeline.Guard`).

    The handler is compiled; through a protocol it calls these by name, as
    Python code would, so `bench/ablated.py` can switch the guard off by
    replacing them on the class.
    """

    def policy(self, team: str) -> TeamPolicy: ...

    async def inspect(
        self,
        segments: Sequence[Segment],
        policy: TeamPolicy,
        upstream: str = "",
        deadline: float | None = None,
    ) -> Inspection: ...

    def redact(
        self, payload: object, policy: TeamPolicy, upstream: str
    ) -> tuple[object, list[Evidence]]: ...

    async def judge(
        self,
        inspection: Inspection,
        policy: TeamPolicy,
        source: str,
        destination: str,
        *,
        approved: bool = False,
        outbound: bool = True,
    ) -> Decision: ...


class ReverseProxy:
    def __init__(
        self,
        config: LoadedConfig,
        guard: Checks,
        origins: Origins,
        metrics: Metrics,
        gate: Gate,
        guardian: Guardian,
    ) -> None:
        self._config = config
        self._gate = gate
        self._guardian = guardian
        self._guard = guard
        self._origins = origins
        self._metrics = metrics
        self._routes = _routes(config)
        self._teams = TeamResolver(config)
        limits = config.gateway.limits
        self._limit = limits.max_body_bytes
        self._body_timeout = limits.body_read_timeout_s
        self._inspect_timeout = limits.inspect_timeout_ms / 1000
        self._skip_headers = frozenset(config.gateway.scan_headers.skip)
        # Requests in `handle`: whether a cohort has anyone to wait for.
        self._in_flight = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self._in_flight += 1
        try:
            exchange = request[EXCHANGE]
            target = self._resolve(exchange, request)
            body = await self._read(request)
            await self._cohort()
            outgoing = await self._inspect(exchange, request, target, body)
            if outgoing.held is not None:
                return await self._hold(exchange, request, outgoing, outgoing.held)
            await self._cohort()
            return await self._forward(exchange, request, outgoing)
        finally:
            self._in_flight -= 1

    async def _cohort(self) -> None:
        """Let the other requests in flight reach this step first.

        Under load, requests that arrived together wait for one another
        before each of a few steps (parsing, the secret floor, the
        injection check, the send, the answer's check), so that each step
        runs for all of them back to back. Run one request at a time end to
        end, every step's code and tables (the parser's, the detectors')
        are evicted from the CPU caches by the rest of the other requests'
        paths, and are read again from memory. A lone request has no one to
        wait for, and does not pay the turn of the event loop a yield costs.
        """
        if self._in_flight > 1:
            await TURN

    # -- resolve: upstream, team, path --

    def _resolve(self, exchange: Exchange, request: web.Request) -> _Target:
        route = self._routes.get(exchange.upstream)
        if route is None:
            raise NotFound(
                f"no upstream named {shown(exchange.upstream)!r}; "
                f"configured: {', '.join(self._routes)}"
            )
        exchange.route = route
        exchange.flavor = route.flavor
        match = self._teams.resolve_request(request)
        if match is None:
            raise Unauthorized("no team matches this request and no default team is configured")
        exchange.team = match
        if match.team.upstreams is not None and route.name not in match.team.upstreams:
            raise Refused(
                Decision(
                    "deny", "upstream_not_allowed", f"team {match.name} may not use {route.name}"
                )
            )
        if _is_upgrade(request):
            raise Refused(_UPGRADE_REFUSED)
        target = _Target(route, match, _check_path(exchange.path))
        exchange.advance(Phase.ROUTED)
        return target

    # -- read: the whole body, bounded in size and in time --

    async def _read(self, request: web.Request) -> bytes:
        if not request.body_exists:
            return b""
        declared = request.content_length
        if declared is not None and declared > self._limit:
            raise TooLarge(f"request body of {declared} bytes exceeds the limit of {self._limit}")
        content = request.content
        try:
            if content.is_eof():
                # The whole body came with the headers, as an agent's request
                # usually does: there is nothing to wait for, so no deadline.
                body = content.read_nowait()
            else:
                body = await self._receive(content)
        except HttpProcessingError as exc:
            # A malformed chunked encoding or a body shorter than its Content-Length.
            raise BadRequest(
                f"request body could not be read ({type(exc).__name__})", code="invalid_body"
            ) from exc
        if len(body) > self._limit:
            raise TooLarge(f"request body exceeds the limit of {self._limit} bytes")
        return body

    async def _receive(self, content: StreamReader) -> bytes:
        """The rest of a body still arriving, bounded in size and in time."""
        loop = asyncio.get_running_loop()
        chunks: list[bytes] = []
        size = 0
        try:
            # The deadline moves with every chunk: a slow upload is fine, a
            # client that stops sending is not.
            async with asyncio.timeout(self._body_timeout) as deadline:
                while chunk := await content.readany():
                    size += len(chunk)
                    if size > self._limit:
                        raise TooLarge(f"request body exceeds the limit of {self._limit} bytes")
                    chunks.append(chunk)
                    deadline.reschedule(loop.time() + self._body_timeout)
        except TimeoutError as exc:
            raise RequestTimeout(
                f"no request body bytes for {self._body_timeout:g} s; the body is incomplete"
            ) from exc
        return b"".join(chunks)

    # -- inspect: every text of the request, to a final verdict --

    async def _inspect(
        self, exchange: Exchange, request: web.Request, target: _Target, body: bytes
    ) -> _Outgoing:
        route, team, api_path = target.route, target.team, target.api_path
        started = time.perf_counter()
        content_type = request.headers.get("Content-Type")
        if body:
            require_json(api_path, content_type)
        policy = self._guard.policy(team.name)
        exchange.policy_version = policy.policy_version
        custody = self._custody(route, team)
        headers = request_headers(
            request.headers, strip_credentials=custody is not None or team.by_key
        )
        review: Review | None = None
        stream = False
        payload: object = None
        destination = route.name
        # The deadline stops the detectors between steps; a classifier call or
        # the review store, the only waits here, are held to it by a timer of
        # their own (`_bounded`): most requests never wait, and a timer is
        # among the dearest things a request sets up.
        try:
            # Repeated headers are one list to the upstream (RFC 9110, 5.3),
            # so they are read as one here: "identity" then "gzip" is refused.
            encoding = ", ".join(request.headers.getall("Content-Encoding", ()))
            decoded = decode_content(body, encoding, self._limit)
            segments, payload = request_segments(api_path, exchange.query, content_type, decoded)
            segments.insert(0, path_segment(api_path))
            if request.method not in METHODS:
                # Any token is a method to some parsers, and it goes upstream.
                segments.append(Segment("method", "path", request.method, Trust.OPAQUE))
            segments.extend(
                header_segments(headers, skip=self._skip_headers, key_kinds=route.key_kinds)
            )
            stream = _is_stream(payload, exchange.query)
            model = payload.get("model") if isinstance(payload, dict) else None
            destination = f"{route.name}:{model}" if isinstance(model, str) else route.name
            await self._cohort()
            # Set after the cohort's turn: the time limit is the checks', not the queue's.
            deadline = time.monotonic() + self._inspect_timeout
            inspection = await self._guard.inspect(segments, policy, route.name, deadline)
            verdict = inspection.floor
            if verdict.action == "deny" and policy.on_secret == "redact":
                redacted = await self._redact(
                    exchange, api_path, content_type, payload, segments, policy, deadline
                )
                if redacted is not None:
                    inspection, payload, body = redacted
                    decoded = body
                    verdict = inspection.floor
                    # The rewritten body is plain JSON: it goes as is.
                    headers.popall("Content-Encoding", None)
            if verdict.action != "deny":
                # What the review gate binds: this sender, this destination,
                # this payload (the exact bytes when it is not JSON).
                reviewed = _Reviewed(
                    team.name,
                    team.source,
                    destination,
                    payload if payload is not None else {"sha256": sha256_hex(decoded)},
                    policy.policy_version,
                )
                # The floor and the injection check read different tables:
                # with a turn between them the cohort runs every floor, then
                # every injection check, and each set of tables stays in
                # cache from one request to the next.
                await self._cohort()
                verdict, review = await self._judge(inspection, policy, reviewed, deadline)
            exchange.advance(Phase.CHECKED)
        except RequestError:
            raise
        except TimeoutError:
            guard_log.error("inspection of %s exceeded its time limit", exchange.request_id)
            verdict = Decision(
                "deny", GUARD_FAILURE, "the guard could not finish checking this request in time"
            )
        except Exception as exc:
            # A bug or an exhausted resource in parsing or a detector: the
            # request is denied like any other guard failure, and visibly so.
            log_failure(guard_log, "guard path", exc, exchange.request_id)
            verdict = Decision("deny", GUARD_FAILURE, "the guard could not check this request")
        self._metrics.latency.observe(time.perf_counter() - started)
        exchange.verdict = verdict
        if review is not None:
            exchange.review_id = review.id
        if verdict.action == "deny" or (verdict.action == "review" and review is None):
            raise Refused(verdict)
        if custody is not None:
            add_custody(headers, flavor=route.flavor, custody_key=custody)
        held = review if verdict.action == "review" else None
        # Answers are read before the agent gets them: they must come as sent.
        headers["Accept-Encoding"] = "identity"
        return _Outgoing(route, team, headers, body, held, stream, payload, destination)

    async def _redact(
        self,
        exchange: Exchange,
        api_path: str,
        content_type: str | None,
        payload: object,
        segments: list[Segment],
        policy: TeamPolicy,
        deadline: float,
    ) -> tuple[Inspection, object, bytes] | None:
        """The request with its secrets replaced (`outbound.on_secret: redact`), inspected again.

        Only a JSON body can be rewritten; a secret in the path, the query or a
        header is not, and the request stays denied. So does one whose rewrite
        the floor still finds something in.
        """
        if not isinstance(payload, (dict, list)):
            return None
        route = exchange.route
        assert route is not None
        rewritten, redacted = self._guard.redact(payload, policy, route.name)
        if not redacted:
            return None
        body = json.dumps(rewritten, separators=(",", ":")).encode()
        fresh, parsed = request_segments(api_path, exchange.query, content_type, body)
        # The request's other texts (path, method, headers) as they were.
        fresh[:0] = [s for s in segments if s.role in ("path", "header")]
        inspection = await self._guard.inspect(fresh, policy, route.name, deadline)
        if inspection.floor.action == "deny":
            return None
        exchange.redacted = redacted
        return inspection, parsed, body

    async def _judge(
        self, inspection: Inspection, policy: TeamPolicy, reviewed: _Reviewed, deadline: float
    ) -> tuple[Decision, Review | None]:
        """The verdict past the floor, through the review gate.

        The gate is asked before any classification: a request a reviewer is
        still looking at stays pending without being classified again; one
        they denied is denied; one they approved is classified once more, and
        then only a deny blocks it. A new review verdict makes a pending review.
        """
        gate = self._gate
        digest: str | None = None
        review: Review | None = None
        if gate.may_know(reviewed.team):
            digest = reviewed.digest()
            review = await _bounded(gate.decided(reviewed.team, digest), deadline)
        if review is not None and review.status != "approved":
            return _gated(review), review
        judged = self._guard.judge(
            inspection,
            policy,
            reviewed.source,
            reviewed.destination,
            approved=review is not None,
        )
        # Without a classifier the guard's judgement does not wait on anything.
        verdict = await (judged if policy.classifier is None else _bounded(judged, deadline))
        if verdict.action != "review":
            return verdict, review
        try:
            review = await _bounded(
                gate.hold(
                    pending(
                        team=reviewed.team,
                        digest=digest or reviewed.digest(),
                        direction=_DIRECTION,
                        source=reviewed.source,
                        destination=reviewed.destination,
                        category=verdict.category,
                        reason=verdict.reason,
                        policy_version=reviewed.policy_version,
                        excerpt=verdict.excerpt,
                        findings=tuple(
                            ReviewFinding(e.kind, e.fingerprint, e.where) for e in verdict.evidence
                        ),
                    )
                ),
                deadline,
            )
        except ReviewCapacity:
            limit = gate.reviews.settings(reviewed.team).max_pending
            return (
                Decision(
                    "deny",
                    "review_capacity",
                    f"team {reviewed.team} already has {limit} requests waiting for review",
                ),
                None,
            )
        if review.status == "pending":
            return verdict, review
        if review.status == "approved":
            # Held by another replica and approved there: this was the one
            # fresh classification, and it did not deny.
            return _approved(review), review
        return _gated(review), review

    def _custody(self, route: Route, team: TeamMatch) -> str | None:
        team_cred = team.team.credentials.get(route.name)
        if team_cred is not None:
            return self._config.env.get(team_cred.api_key_env)
        return route.custody_key

    # -- hold: until a reviewer decides, or as a ticket --

    async def _hold(
        self, exchange: Exchange, request: web.Request, outgoing: _Outgoing, review: Review
    ) -> web.StreamResponse:
        settings = self._gate.reviews.settings(outgoing.team.name)
        reason = f"{review.category}: {review.reason}"
        if settings.hold == "ticket" or settings.hold_timeout_s <= 0:
            raise Held(review.id, reason)
        if outgoing.stream:
            return await self._hold_stream(
                exchange, request, outgoing, review, settings.hold_timeout_s
            )
        started = time.perf_counter()
        try:
            async with asyncio.timeout(settings.hold_timeout_s):
                decided = await self._gate.wait(review)
        except TimeoutError:
            raise Held(review.id, reason) from None
        finally:
            exchange.held_ms = ms(time.perf_counter() - started)
        if decided.status != "approved":
            raise Refused(_gated(decided))
        exchange.verdict = _approved(decided)
        return await self._forward(exchange, request, outgoing)

    async def _hold_stream(
        self,
        exchange: Exchange,
        request: web.Request,
        outgoing: _Outgoing,
        review: Review,
        hold_s: float,
    ) -> web.StreamResponse:
        """A streamed request waits on an open event stream, kept alive by comments.

        Its status line has to go out before the decision is known, so a deny
        or the deadline ends the stream with an error event in the provider's
        shape (code review_denied or review_pending) rather than a 403.
        """
        response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "x-reefgate-request-id": exchange.request_id,
                "x-reefgate-decision": "review",
                "x-reefgate-review-id": review.id,
            },
        )
        await response.prepare(request)
        exchange.advance(Phase.STREAMING)
        exchange.status = 200
        loop = asyncio.get_running_loop()
        deadline = loop.time() + hold_s
        started = time.perf_counter()
        waiting = asyncio.ensure_future(self._gate.wait(review))
        decided: Review | None = None
        try:
            while (remaining := deadline - loop.time()) > 0:
                done, _ = await asyncio.wait({waiting}, timeout=min(HEARTBEAT_S, remaining))
                if done:
                    decided = waiting.result()
                    break
                await response.write(b": reefgate is holding this request for review\n\n")
        finally:
            waiting.cancel()
            exchange.held_ms = ms(time.perf_counter() - started)
        if decided is None or decided.status != "approved":
            if decided is None:
                code = "review_pending"
                message = (
                    f"reefgate is holding this request for review {review.id}; send the same "
                    "request again once a reviewer has approved it"
                )
                exchange.outcome = "review_pending"
            else:
                exchange.verdict = _gated(decided)
                code, message = "review_denied", f"a reviewer denied this request ({review.id})"
            await response.write(stream_error_event(exchange.flavor, message, code))
            await response.write_eof()
            return response
        exchange.verdict = _approved(decided)
        return await self._forward(exchange, request, outgoing, response)

    # -- forward: to the upstream, and the answer back --

    async def _forward(
        self,
        exchange: Exchange,
        request: web.Request,
        outgoing: _Outgoing,
        started: web.StreamResponse | None = None,
    ) -> web.StreamResponse:
        """Send the request upstream and relay the answer, its tool calls judged.

        ``started``: an event stream already answering the client (a held
        streamed request): the upstream's events go into it, and any other
        answer becomes an error event there.
        """
        route = outgoing.route
        target = _upstream_target(route, exchange.path, exchange.query)
        upstream_started = time.perf_counter()
        exchange.advance(Phase.FORWARDED)
        try:
            async with self._origins.request(
                route.origin, request.method, target, outgoing.headers, outgoing.body
            ) as upstream:
                # The upstream's latency: until its response headers, whatever follows.
                exchange.upstream_ms = ms(time.perf_counter() - upstream_started)
                exchange.upstream_status = exchange.status = upstream.status
                out_headers = response_headers(upstream.headers)
                out_headers["x-reefgate-request-id"] = exchange.request_id
                out_headers["x-reefgate-decision"] = "allow"
                content_type = upstream.headers.get("Content-Type", "")
                is_sse = content_type.startswith("text/event-stream")
                judge = self._guardian.judge_for(
                    exchange, outgoing.team, outgoing.payload, outgoing.destination, request.headers
                )
                team = outgoing.team.team
                if started is not None:
                    if is_sse and upstream.status == 200:
                        return await relay_stream(
                            exchange,
                            request,
                            upstream,
                            out_headers,
                            judge,
                            self._text_filter(team),
                            started,
                        )
                    await upstream.read()
                    return await end_stream(
                        started,
                        exchange,
                        f"upstream {route.name} answered {upstream.status}",
                        "upstream_error",
                    )
                ok = 200 <= upstream.status < 300
                # The SDKs parse by what they asked for, not by the Content-Type:
                # an answer to a streamed request is read as events whatever it
                # says it is, and a text answer as JSON.
                if is_sse or (ok and outgoing.stream):
                    return await relay_stream(
                        exchange, request, upstream, out_headers, judge, self._text_filter(team)
                    )
                if not (ok and may_hold_calls(content_type)):
                    if upstream.content_length is None:
                        return await relay_raw(exchange, request, upstream, out_headers)
                    data = await upstream.read()
                    return web.Response(status=upstream.status, body=data, headers=out_headers)
                if compressed(upstream):
                    raise UpstreamError(
                        "upstream sent a compressed answer, which reefgate cannot inspect",
                        status=502,
                        code="upstream_error",
                    )
                data = await read_bounded(upstream, self._limit)
                await self._cohort()
                data = await edited_body(data, judge, self._rewrite(team))
                return web.Response(status=upstream.status, body=data, headers=out_headers)
        except TimeoutError as exc:
            if started is not None:
                return await end_stream(
                    started, exchange, f"upstream {route.name} timed out", "upstream_timeout"
                )
            raise UpstreamError(
                f"upstream {route.name} timed out", status=504, code="upstream_timeout"
            ) from exc
        except aiohttp.ClientError as exc:
            if started is not None and not isinstance(exc, ConnectionResetError):
                return await end_stream(
                    started,
                    exchange,
                    f"upstream {route.name} is unreachable ({type(exc).__name__})",
                    "upstream_unreachable",
                )
            raise UpstreamError(
                f"upstream {route.name} is unreachable ({type(exc).__name__})",
                status=502,
                code="upstream_unreachable",
            ) from exc

    def _text_filter(self, team: Team) -> FilterFactory | None:
        if not team.redact_output:
            return None
        window = self._config.gateway.guardian.redact_window
        return lambda: StreamRedactor(window)

    def _rewrite(self, team: Team) -> Rewrite | None:
        return redact if team.redact_output else None
