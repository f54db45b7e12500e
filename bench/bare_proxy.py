"""The baseline: a bare aiohttp pass-through proxy with no inspection, on uvloop.

    python -m bench.bare_proxy --upstream http://127.0.0.1:PORT [--port 0]

`/<name>/<rest>` goes to `UPSTREAM/<rest>` like the gateway's routing, through
one shared ClientSession; the answer is streamed back as it arrives. It is
what any aiohttp proxy costs, so the gateway's excess over it is the price of
the inspection. It prints `bare-proxy listening on http://127.0.0.1:PORT`.
"""

from __future__ import annotations

import argparse

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from bench._common import run_async, serve_app

_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


def _copy(headers: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in _HOP)


SESSION = web.AppKey("session", aiohttp.ClientSession)
UPSTREAM = web.AppKey("upstream", str)


async def _proxy(request: web.Request) -> web.StreamResponse:
    path = request.raw_path
    rest = path[path.find("/", 1) :] if path.count("/") > 1 else "/"
    body = await request.read()
    async with request.app[SESSION].request(
        request.method,
        URL(request.app[UPSTREAM] + rest, encoded=True),
        headers=_copy(request.headers),
        data=body or None,
        allow_redirects=False,
    ) as upstream:
        resp = web.StreamResponse(status=upstream.status, headers=_copy(upstream.headers))
        if upstream.content_length is not None:
            resp.content_length = upstream.content_length
        await resp.prepare(request)
        async for chunk in upstream.content.iter_any():
            await resp.write(chunk)
        await resp.write_eof()
        return resp


async def serve(upstream: str, port: int, max_s: float) -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[UPSTREAM] = upstream.rstrip("/")
    # The same session settings as the gateway's: no added headers, bytes as sent.
    app[SESSION] = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=4096),
        auto_decompress=False,
        skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
        timeout=aiohttp.ClientTimeout(total=None),
        cookie_jar=aiohttp.DummyCookieJar(),
    )
    app.router.add_route("*", "/{tail:.*}", _proxy)

    async def close_session(app: web.Application) -> None:
        await app[SESSION].close()

    app.on_cleanup.append(close_session)
    await serve_app(app, "bare-proxy", port, max_s)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bare_proxy")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-s", type=float, default=3600.0, help="exit after this long")
    args = parser.parse_args()
    run_async(serve(args.upstream, args.port, args.max_s))


if __name__ == "__main__":
    main()
