"""A2A interposition: the local agent's messages to peers, and peers' messages to it, guarded.

``/a2a/<peer>[/...]`` goes to ``peers.a2a.<peer>.url``: what the local agent
sends is checked outbound (no secret leaves), what the peer answers (its
message, a task's status message, artifacts and history, and every streamed
update) inbound (no injected instruction arrives) before the agent sees it.
``/a2a-in[/...]`` puts the gateway in front of the local agent's own A2A
server (``peers.a2a_inbound.local_agent``): the peer's message is checked
inbound and the local agent's answer outbound.

A refused message or answer becomes a JSON-RPC error object (code -32050,
``data.category``) with HTTP 200, as JSON-RPC clients expect; a streamed
answer that turns out to be refused ends with such an error as its last
event. A GET (the agent card at ``/.well-known/agent-card.json``) is passed
through. Each exchange is one audit entry, like an LLM request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from gateway.config.loader import LoadedConfig
from gateway.config.teams import TeamMatch, TeamResolver
from gateway.guard.decision import Decision
from gateway.guard.floor import shown
from gateway.guard.pipeline import Guard
from gateway.guard.verdict import GUARD_FAILURE
from gateway.observe.logs import log_failure
from gateway.proxy.exchange import Exchange, Phase
from gateway.proxy.middleware import EXCHANGE
from gateway.proxy.upstream import request_headers
from gateway.wire import a2a
from gateway.wire.base import PayloadError, Segment, Trust
from gateway.wire.sse import SSEDecoder, encode_event

log = logging.getLogger("reefgate.a2a")

INBOUND_PREFIX = "a2a-in"
_MAX_ANSWER_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Leg:
    """One direction of an exchange: where it goes, and how each side is read."""

    url: str
    timeout: aiohttp.ClientTimeout
    # Trust of what the caller sends, and of what comes back.
    sent: Trust
    answered: Trust
    peer: str


class A2AProxy:
    def __init__(self, config: LoadedConfig, guard: Guard, session: aiohttp.ClientSession) -> None:
        self._config = config
        self._guard = guard
        self._session = session
        self._teams = TeamResolver(config)
        self._limit = config.gateway.limits.max_body_bytes
        self._inspect_timeout = config.gateway.limits.inspect_timeout_ms / 1000

    def _leg(self, exchange: Exchange) -> _Leg | None:
        peers = self._config.gateway.peers
        if exchange.upstream == INBOUND_PREFIX:
            inbound = peers.a2a_inbound
            if inbound is None:
                return None
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=600)
            url = inbound.local_agent.rstrip("/") + exchange.path
            return _Leg(url, timeout, Trust.UNTRUSTED, Trust.TRUSTED, "local_agent")
        name, _, rest = exchange.path.lstrip("/").partition("/")
        peer = peers.a2a.get(name)
        if peer is None:
            return None
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=peer.timeout_s)
        url = peer.url.rstrip("/") + ("/" + rest if rest else "")
        return _Leg(url, timeout, Trust.TRUSTED, Trust.UNTRUSTED, name)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        exchange = request[EXCHANGE]
        leg = self._leg(exchange)
        if leg is None:
            exchange.status = 404
            exchange.error = "unknown_peer"
            return web.json_response(
                a2a.error(None, a2a.INVALID_REQUEST, "no A2A peer is configured at this path"),
                status=404,
            )
        team = self._teams.resolve_request(request)
        if team is None:
            exchange.status = 401
            exchange.error = "no_team"
            return web.json_response(
                a2a.error(None, a2a.INVALID_REQUEST, "no team matches this request"), status=401
            )
        exchange.team = team
        exchange.advance(Phase.ROUTED)
        direction = "outbound" if leg.sent is Trust.TRUSTED else "inbound"
        # The rest of the path goes to the peer too: the floor reads it.
        path = Segment("path", "path", exchange.path, Trust.OPAQUE)
        if request.method == "GET":
            # The agent card and other discovery documents.
            decision = await self._check([path], team, leg.peer, direction)
            if decision.action != "allow":
                exchange.verdict = decision
                exchange.status = 403
                return web.json_response(_refused(None, decision, "request"), status=403)
            return await self._pass(exchange, request, leg)
        body = await request.read()
        try:
            rpc = a2a.parse_request(body)
        except PayloadError as exc:
            exchange.status = 400
            exchange.error = "invalid_body"
            return web.json_response(a2a.error(None, a2a.PARSE_ERROR, str(exc)), status=400)
        rpc_id = rpc.get("id")
        segments = [path, *a2a.request_segments(rpc, leg.sent)]
        decision = await self._check(segments, team, leg.peer, direction)
        exchange.verdict = decision
        exchange.policy_version = self._guard.policy(team.name).policy_version
        exchange.advance(Phase.CHECKED)
        if decision.action != "allow":
            exchange.status = 200
            return web.json_response(_refused(rpc_id, decision, "message"))
        return await self._forward(exchange, request, leg, team, rpc_id, body)

    async def _check(
        self, segments: list[Segment], team: TeamMatch, peer: str, direction: str
    ) -> Decision:
        policy = self._guard.policy(team.name)
        source, destination = team.source, f"a2a:{peer}"
        if direction == "inbound":
            source, destination = destination, source
        try:
            async with asyncio.timeout(self._inspect_timeout):
                return await self._guard.check(
                    segments, policy, source, destination, time.monotonic() + self._inspect_timeout
                )
        except TimeoutError:
            return Decision("deny", GUARD_FAILURE, "the guard could not finish in time")
        except Exception as exc:
            log_failure(log, "A2A guard path", exc)
            return Decision("deny", GUARD_FAILURE, "the guard could not check this message")

    async def _forward(
        self,
        exchange: Exchange,
        request: web.Request,
        leg: _Leg,
        team: TeamMatch,
        rpc_id: object,
        body: bytes,
    ) -> web.StreamResponse:
        # A gateway-issued key is the gateway's, never the peer's.
        headers = request_headers(request.headers, strip_credentials=team.by_key)
        exchange.advance(Phase.FORWARDED)
        try:
            async with self._session.post(
                leg.url, data=body, headers=headers, timeout=leg.timeout, allow_redirects=False
            ) as upstream:
                exchange.upstream_status = exchange.status = upstream.status
                if upstream.headers.get("Content-Type", "").startswith("text/event-stream"):
                    return await self._stream(exchange, request, upstream, leg, team, rpc_id)
                data = await upstream.content.read(_MAX_ANSWER_BYTES + 1)
                if len(data) > _MAX_ANSWER_BYTES:
                    return web.json_response(
                        a2a.error(rpc_id, a2a.UNAVAILABLE, "the peer's answer is too large")
                    )
        except (aiohttp.ClientError, TimeoutError) as exc:
            exchange.status = 200
            exchange.outcome = "upstream_unreachable"
            return web.json_response(
                a2a.error(rpc_id, a2a.UNAVAILABLE, f"peer unreachable ({type(exc).__name__})")
            )
        try:
            answer = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return web.json_response(
                a2a.error(rpc_id, a2a.UNAVAILABLE, "the peer's answer is not JSON")
            )
        refusal = await self._answer_refused(answer, leg, team)
        if refusal is not None:
            exchange.verdict = refusal
            return web.json_response(_refused(rpc_id, refusal, "answer"))
        return web.Response(status=upstream.status, body=data, content_type="application/json")

    async def _answer_refused(self, answer: object, leg: _Leg, team: TeamMatch) -> Decision | None:
        if not isinstance(answer, dict) or "result" not in answer:
            return None  # a JSON-RPC error from the peer: nothing to act on
        direction = "inbound" if leg.answered is Trust.UNTRUSTED else "outbound"
        decision = await self._check(
            a2a.result_segments(answer["result"], leg.answered), team, leg.peer, direction
        )
        return None if decision.action == "allow" else decision

    async def _stream(
        self,
        exchange: Exchange,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        leg: _Leg,
        team: TeamMatch,
        rpc_id: object,
    ) -> web.StreamResponse:
        """Each streamed update checked before it is sent; a refused one ends the stream."""
        response = web.StreamResponse(
            status=upstream.status,
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
        )
        await response.prepare(request)
        exchange.advance(Phase.STREAMING)
        decoder = SSEDecoder()
        try:
            async for chunk in upstream.content.iter_any():
                for event in decoder.feed(chunk):
                    if not event.dispatch:
                        await response.write(event.raw)
                        continue
                    try:
                        answer = json.loads(event.data)
                    except ValueError:
                        answer = None
                    refusal = await self._answer_refused(answer, leg, team)
                    if refusal is not None:
                        exchange.verdict = refusal
                        error = json.dumps(_refused(rpc_id, refusal, "update"))
                        await response.write(encode_event(None, error))
                        await response.write_eof()
                        return response
                    await response.write(event.raw)
        except (aiohttp.ClientError, TimeoutError) as exc:
            exchange.outcome = "upstream_failed_mid_stream"
            failure = a2a.error(rpc_id, a2a.UNAVAILABLE, f"peer failed ({type(exc).__name__})")
            await response.write(encode_event(None, json.dumps(failure)))
        await response.write_eof()
        return response

    async def _pass(self, exchange: Exchange, request: web.Request, leg: _Leg) -> web.Response:
        try:
            strip = exchange.team is not None and exchange.team.by_key
            async with self._session.get(
                leg.url,
                headers=request_headers(request.headers, strip_credentials=strip),
                timeout=leg.timeout,
            ) as upstream:
                data = await upstream.content.read(_MAX_ANSWER_BYTES)
                exchange.upstream_status = exchange.status = upstream.status
                return web.Response(
                    status=upstream.status,
                    body=data,
                    content_type=upstream.content_type or "application/json",
                )
        except (aiohttp.ClientError, TimeoutError) as exc:
            exchange.status = 502
            return web.json_response(
                a2a.error(None, a2a.UNAVAILABLE, f"peer unreachable ({type(exc).__name__})"),
                status=502,
            )


def _refused(rpc_id: object, decision: Decision, what: str) -> dict[str, Any]:
    verb = "held for review" if decision.action == "review" else "blocked"
    return a2a.error(
        rpc_id,
        a2a.BLOCKED,
        f"reefgate {verb} this {what} ({decision.category}): {shown(decision.reason)}",
        {"category": decision.category, "decision": decision.action},
    )
