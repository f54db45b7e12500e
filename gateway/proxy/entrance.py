"""Exchange routes: the aiohttp handlers of the routes whose requests are exchanges.

Each runs its handler through `middleware.serve_exchange` (the request's
id, audit entry and errors). These steps used to be aiohttp middlewares,
which applied to every route and added about twenty interpreted calls to
each request: aiohttp's own middleware that sets the request's current app,
the property chains of ``request.app`` and ``request.match_info``, the
request mapping's ``get``. This module is not compiled: aiohttp takes only
a coroutine function as a route's handler, and a function compiled by mypyc
is not one.
"""

from __future__ import annotations

from aiohttp import web

from gateway.proxy.middleware import LEDGER, Handler, serve_exchange


def exchange_route(app: web.Application, handler: Handler) -> Handler:
    """``handler`` as the handler of an exchange route of ``app`` (its ledger is set at startup)."""

    async def route(request: web.Request) -> web.StreamResponse:
        return await serve_exchange(request, app[LEDGER], handler)

    return route
