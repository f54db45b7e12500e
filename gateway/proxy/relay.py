"""The answer's way back: every tool call judged before the agent can act on it.

An event stream goes through a sans-IO decoder and the answer editor
(:mod:`gateway.wire.replies`): text events go out as they arrive, a tool
call's events wait until the call is whole and judged. A JSON answer is read
whole, judged and re-encoded only when something in it changed. Anything else
(files, audio, model lists) is relayed as it comes.

The stream's status line is gone before the first event, so every failure
after it, the upstream's or the guardian's, ends the stream with an error
event in the provider's shape at an event boundary, and never with part of a
call.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from gateway.errors import UpstreamError
from gateway.proxy.exchange import Exchange, Phase
from gateway.proxy.origin import Answer
from gateway.wire.calls import ToolCall
from gateway.wire.errors import stream_error_event
from gateway.wire.replies import AnswerStream, Ruling, body_editor, names_no_call
from gateway.wire.replies.base import FilterFactory, Rewrite
from gateway.wire.sse import SSEDecoder, SSEFramer

log: Final = logging.getLogger("reefgate.access")

Judge = Callable[[ToolCall], Awaitable[Ruling]]

# Seconds between the comments that keep a stream alive while a call is judged
# (an LLM guardian or a reviewer can take a while).
HEARTBEAT_S: Final = 5.0
_HEARTBEAT: Final = b": reefgate is judging a tool call\n\n"


def may_hold_calls(content_type: str) -> bool:
    """Whether an answer of this type could be read as JSON by an SDK: JSON or any text.

    Media and files are relayed as they come; an SDK parses an answer to a
    JSON request as JSON even when it is labelled text/plain or not at all.
    """
    media = content_type.partition(";")[0].strip().lower()
    return media in ("", "application/json") or media.endswith("+json") or media.startswith("text/")


def _identity(headers: Mapping[str, str]) -> bool:
    encoding = headers.get("Content-Encoding", "identity").strip().lower()
    return encoding in ("", "identity")


async def relay_stream(
    exchange: Exchange,
    request: web.Request,
    upstream: Answer,
    headers: CIMultiDict[str],
    judge: Judge,
    text_filter: FilterFactory | None,
    started: web.StreamResponse | None = None,
) -> web.StreamResponse:
    """An event stream, event by event, with its tool calls judged on the way."""
    if not _identity(upstream.headers):
        raise UpstreamError(
            "upstream sent a compressed event stream, which reefgate cannot inspect",
            status=502,
            code="upstream_error",
        )
    response = started or web.StreamResponse(status=upstream.status, headers=headers)
    # The framer cuts whole events by a byte search; they are decoded one by
    # one only when the editor must read them (see AnswerStream.passes).
    framer = SSEFramer()
    decoder = SSEDecoder()
    editor = AnswerStream(text_filter)
    try:
        if started is None:
            await response.prepare(request)
        exchange.advance(Phase.STREAMING)
        try:
            async for chunk in upstream.content.iter_any():
                whole = framer.feed(chunk)
                if not whole:
                    continue
                if editor.passes(whole):
                    await response.write(whole)
                    continue
                out: list[bytes] = []
                # An answer's first chunk often holds all of it: once its first
                # event has told the format, the rest may pass unread like any
                # later chunk instead of being decoded event by event.
                for piece in framer.first_block_apart(whole):
                    if editor.passes(piece):
                        out.append(piece)
                        continue
                    for event in decoder.feed(piece):
                        calls = editor.feed(event)
                        rulings = []
                        for call in calls:
                            if out:
                                # What is ready goes before a wait the agent cannot see.
                                await response.write(b"".join(out))
                                out.clear()
                            rulings.append(await _judged(judge, call, response))
                        out.append(editor.release(rulings))
                if out:
                    await response.write(b"".join(out))
        except ConnectionResetError:
            # aiohttp's error for writing to a client that has gone is also
            # a ClientError; it is not the upstream's failure.
            raise
        except (aiohttp.ClientError, TimeoutError) as exc:
            # An incomplete event the upstream left behind, and any call still
            # held, are dropped with it.
            exchange.outcome = "upstream_failed_mid_stream"
            log.warning("upstream failed mid-stream: %s", type(exc).__name__)
            await response.write(
                stream_error_event(
                    exchange.flavor, "upstream connection failed mid-stream", "upstream_error"
                )
            )
        else:
            rest = framer.flush()
            tail = decoder.feed(rest) + decoder.flush() if rest else decoder.flush()
            if editor.pending():
                exchange.outcome = "upstream_failed_mid_stream"
                await response.write(
                    stream_error_event(
                        exchange.flavor,
                        "upstream ended the stream inside a tool call; the call was not released",
                        "upstream_error",
                    )
                )
            elif tail:
                # A stream that ended without its last blank line: relayed as
                # sent, which no client dispatches as an event.
                await response.write(b"".join(e.raw for e in tail))
        await response.write_eof()
    except ConnectionResetError:
        exchange.outcome = "client_closed"
    return response


async def _judged(judge: Judge, call: ToolCall, response: web.StreamResponse) -> Ruling:
    waiting = asyncio.ensure_future(judge(call))
    try:
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=HEARTBEAT_S)
            if done:
                return waiting.result()
            await response.write(_HEARTBEAT)
    finally:
        waiting.cancel()


async def edited_body(data: bytes, judge: Judge, rewrite: Rewrite | None) -> bytes:
    """A whole JSON answer with its calls judged; the bytes as sent when nothing changed."""
    if rewrite is None and names_no_call(data):
        # Most answers are text: one that cannot name a call goes unparsed.
        return data
    try:
        body = json.loads(data)
    except ValueError:
        return data  # not an answer the agent's SDK could read either
    editor = body_editor(body, rewrite)
    if editor is None:
        return data
    calls = editor.calls()
    if not calls and rewrite is None:
        return data
    rulings = [await judge(call) for call in calls]
    edited = editor.release(rulings)
    return json.dumps(edited, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _past_limit(limit: int) -> UpstreamError:
    return UpstreamError(
        f"upstream answer exceeds the limit of {limit} bytes", status=502, code="upstream_error"
    )


async def read_bounded(upstream: Answer, limit: int) -> bytes:
    """The whole answer, refused past ``limit``: an answer too big to judge is not relayed."""
    if upstream.content_length is not None and upstream.content_length > limit:
        raise UpstreamError(
            f"upstream answer of {upstream.content_length} bytes exceeds the limit of {limit}",
            status=502,
            code="upstream_error",
        )
    content = upstream.content
    if content.is_eof():
        # The whole answer came with its headers, as a short JSON answer does:
        # it is taken from the buffer without a read loop.
        whole = content.read_nowait()
        if len(whole) > limit:
            raise _past_limit(limit)
        return whole
    chunks: list[bytes] = []
    size = 0
    async for chunk in content.iter_any():
        size += len(chunk)
        if size > limit:
            raise _past_limit(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def compressed(upstream: Answer) -> bool:
    return not _identity(upstream.headers)


async def relay_raw(
    exchange: Exchange,
    request: web.Request,
    upstream: Answer,
    headers: CIMultiDict[str],
) -> web.StreamResponse:
    """An answer that holds no call (a file, audio, a listing), as it arrives."""
    response = web.StreamResponse(status=upstream.status, headers=headers)
    try:
        await response.prepare(request)
        exchange.advance(Phase.STREAMING)
        try:
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
        except ConnectionResetError:
            raise
        except (aiohttp.ClientError, TimeoutError) as exc:
            # Not an event stream: the truncation itself is what the client sees.
            exchange.outcome = "upstream_failed_mid_stream"
            log.warning("upstream failed mid-answer: %s", type(exc).__name__)
            request.protocol.force_close()
            return response
        await response.write_eof()
    except ConnectionResetError:
        exchange.outcome = "client_closed"
    return response


async def end_stream(
    response: web.StreamResponse, exchange: Exchange, message: str, code: str
) -> web.StreamResponse:
    """End an event stream the client already has with an error event."""
    exchange.outcome = code
    await response.write(stream_error_event(exchange.flavor, message, code))
    await response.write_eof()
    return response
