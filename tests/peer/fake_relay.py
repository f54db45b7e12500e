"""An in-process Reef relay: checks every signed device request, keeps mail per handle.

    POST /v1/mail/{peer}       body: an envelope -> 202 {seq}
    GET  /v1/mail?after=N      -> {entries: [{seq, envelope}], next}
    POST /v1/mail/{peer}/ack   body: {seq, receipt?} -> 200 {}; drops entry seq
    GET  /v1/mail/ws           (with websocket=True) pushes {"type": "mail", "seq"} per new entry

Every request must verify (gateway.peer.requests.RelayVerifier): 401 / 409 otherwise.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gateway.peer.identity import PublicIdentity, ed25519_public, parse_handle_epoch
from gateway.peer.requests import RelayVerifier


@dataclass
class Entry:
    seq: int
    sender: str  # the authenticated handle that posted it
    envelope: Any


@dataclass
class FakeRelay:
    keys: dict[str, Ed25519PublicKey] = field(default_factory=dict)
    mail: dict[str, list[Entry]] = field(default_factory=dict)
    acks: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)
    posted: list[tuple[str, str, Any]] = field(default_factory=list)
    seq: int = 0
    websocket: bool = False
    sockets: dict[str, list[web.WebSocketResponse]] = field(default_factory=dict)
    pushes: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.verifier = RelayVerifier(self.keys.get)

    def register(self, identity: PublicIdentity) -> None:
        self.keys[identity.peer.handle.lower()] = ed25519_public(identity.ed25519)

    def deliver(self, handle: str, envelope: Any, sender: str = "test") -> int:
        self.seq += 1
        self.mail.setdefault(handle.lower(), []).append(Entry(self.seq, sender, envelope))
        for ws in self.sockets.get(handle.lower(), []):
            task = asyncio.ensure_future(ws.send_json({"type": "mail", "seq": self.seq}))
            self.pushes.add(task)
            task.add_done_callback(self.pushes.discard)
        return self.seq

    def receipts(self, handle: str) -> list[dict[str, Any]]:
        """Receipts the claw `handle` acked."""
        return [
            body["receipt"] for who, _, body in self.acks if who == handle and "receipt" in body
        ]

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/mail/{peer}", self._post)
        app.router.add_get("/v1/mail", self._pull)
        app.router.add_post("/v1/mail/{peer}/ack", self._ack)
        if self.websocket:
            app.router.add_get("/v1/mail/ws", self._ws)
        return app

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        handle, _ = await self._verify(request)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        sockets = self.sockets.setdefault(handle, [])
        sockets.append(ws)
        try:
            async for _ in ws:
                pass
        finally:
            sockets.remove(ws)
        return ws

    async def _verify(self, request: web.Request) -> tuple[str, bytes]:
        body = await request.read()
        verdict = self.verifier.verify(request.method, request.raw_path, request.headers, body)
        if not verdict.ok or verdict.handle is None:
            self.refused.append(verdict.status)
            raise _refusal(verdict.status, verdict.error or "refused")
        return verdict.handle, body

    async def _post(self, request: web.Request) -> web.Response:
        handle, body = await self._verify(request)
        recipient = parse_handle_epoch(request.match_info["peer"])
        envelope = json.loads(body)
        self.posted.append((handle, str(recipient), envelope))
        seq = self.deliver(recipient.handle, envelope, handle)
        return web.json_response({"seq": seq}, status=202)

    async def _pull(self, request: web.Request) -> web.Response:
        handle, _ = await self._verify(request)
        after = int(request.query.get("after", "0"))
        entries = [
            {"seq": e.seq, "envelope": e.envelope}
            for e in self.mail.get(handle, [])
            if e.seq > after
        ]
        return web.json_response(
            {"entries": entries, "next": entries[-1]["seq"] if entries else after}
        )

    async def _ack(self, request: web.Request) -> web.Response:
        handle, body = await self._verify(request)
        data = json.loads(body)
        self.acks.append((handle, request.match_info["peer"], data))
        box = self.mail.get(handle, [])
        self.mail[handle] = [e for e in box if e.seq != data["seq"]]
        return web.json_response({})


def _refusal(status: int, error: str) -> web.HTTPException:
    cls = web.HTTPConflict if status == 409 else web.HTTPUnauthorized
    return cls(text=json.dumps({"error": error}), content_type="application/json")
