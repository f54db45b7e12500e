"""The HTTP server around the gateway app: aiohttp's, with its own errors made the gateway's.

aiohttp answers a request its parser refuses (a header line without a colon,
a bad Content-Length, a NUL in a header) itself: it logs the parser's message
with a traceback and echoes it in a text/plain 400, and the message quotes
the raw request line or header, which may hold a credential. Here such a
request is answered in the provider's error shape, logged by its error type
only, and audited like any other refusal.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_server import Server

from gateway.observe.logs import log_failure
from gateway.proxy.middleware import LEDGER, error_response

log = logging.getLogger("reefgate.server")

# Seconds a connection may sit without a complete request: an idle keep-alive
# connection, or a client that stopped sending in the middle of its headers.
IDLE_TIMEOUT_S = 75.0

_CODES = {400: "malformed_request", 504: "gateway_timeout"}


class _Protocol(RequestHandler):
    # The upstream of an intercepted tunnel this connection is, or None for a
    # connection to the agent listener (gateway.proxy.forward).
    intercepted: str | None = None

    def __init__(self, manager: Server, *, app: web.Application, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._app = app

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        code = _CODES.get(status, "internal_error")
        if status >= 500 and exc is not None:
            log_failure(log, "request handling", exc)
        else:
            log.warning("refused a request: %s", type(exc).__name__ if exc else code)
        ledger = self._app.get(LEDGER)
        if ledger is not None:
            exchange = ledger.open(request)
            exchange.error = code
            exchange.status = status
            ledger.record(exchange)
        if request.writer.output_size > 0:
            raise ConnectionError("the response has started; the connection can only be cut")
        # Which upstream the request was for is unknown, since the request
        # line itself may be what could not be read: the OpenAI shape.
        text = "reefgate could not read this request" if status == 400 else "reefgate failed"
        response = error_response("openai", status, f"{text} ({code})", code)
        response.force_close()
        return response

    def log_exception(self, *args: Any, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info")
        if isinstance(exc, BaseException):
            log_failure(log, "connection", exc)
        else:
            log.error("connection failed")


class _Server(Server):
    app: web.Application

    def __call__(self) -> RequestHandler:
        return _Protocol(self, app=self.app, loop=self._loop, **self._kwargs)


def tunnel_protocol(runner: web.AppRunner, upstream: str) -> RequestHandler:
    """A connection handler of ``runner``'s app for the inside of a tunnel to ``upstream``."""
    server = runner.server
    assert isinstance(server, _Server), "the runner must be a GatewayRunner that is set up"
    protocol = server()
    assert isinstance(protocol, _Protocol)
    protocol.intercepted = upstream
    return protocol


class GatewayRunner(web.AppRunner):
    """`web.AppRunner` with the gateway's answers to malformed requests and its timeouts."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        kwargs.setdefault("handler_cancellation", True)
        kwargs.setdefault("access_log", None)
        # Bodies stay exactly as sent: the gateway decodes them itself, with its
        # own limits, and forwards the original bytes.
        kwargs.setdefault("auto_decompress", False)
        kwargs.setdefault("keepalive_timeout", IDLE_TIMEOUT_S)
        super().__init__(app, **kwargs)

    async def _make_server(self) -> Server:
        server = await super()._make_server()
        # aiohttp offers no hook for the protocol its server makes; the server
        # is a plain class, so it becomes the subclass that makes ours.
        server.__class__ = _Server
        assert isinstance(server, _Server)
        server.app = self.app
        return server
