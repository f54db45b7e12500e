"""Stage timers in one process: what each step of a request costs, without HTTP around it.

The ablation servers of `breakdown` give each stage's cost as a difference of
two noisy CPU figures; these timers run the gateway's own functions on the
same agent turns (new user text and tool result every time, the history
repeated, so the guard's per-text cache works as in the server) and report
microseconds per request for each step directly:

* parse: content decoding, JSON, the adapter's segments;
* guard: the floor over every segment, then the inbound check (`inspect` and
  `judge` of the default team on the shipped config, caches warm as in a run);
* audit: the entry's record and its append to a hash-chained file;
* headers: the copy of the agent's headers that goes upstream.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

from multidict import CIMultiDict

from bench._corpus import AgentTurns

CHAT = "/v1/chat/completions"
_HEADERS = {
    "Host": "127.0.0.1:8787",
    "Content-Type": "application/json",
    "Authorization": "Bearer agent-key",
    "User-Agent": "OpenAI/Python 1.99.0",
    "Accept": "application/json",
    "X-Stainless-Lang": "python",
    "X-Stainless-Package-Version": "1.99.0",
    "X-Stainless-Runtime": "CPython",
    "Content-Length": "4500",
}


async def stage_us(config_dir: Path, tmp: Path, requests: int) -> dict[str, float]:
    """Microseconds per request for each stage, over ``requests`` distinct bodies."""
    from gateway.app import build_guard
    from gateway.config.loader import load
    from gateway.observe.audit import AuditLog
    from gateway.proxy.upstream import request_headers
    from gateway.wire.body import decode_content, request_segments

    config = load(config_dir, environ={})
    guard = build_guard(config)
    policy = guard.policy("default")
    turns = AgentTurns()
    bodies = [turns.body(i, "stages", False) for i in range(requests)]
    # Warm the history's cache entries and every lazy table, as a running server has.
    warm = [turns.body(i, "warm", False) for i in range(50)]
    headers = CIMultiDict(_HEADERS)

    def parse(body: bytes) -> object:
        return request_segments(CHAT, "", "application/json", decode_content(body, "", 1 << 25))

    parsed = [parse(b)[0] for b in bodies]  # type: ignore[index]

    async def guard_all(items: list[object]) -> float:
        started = time.perf_counter()
        for segments in items:
            inspection = await guard.inspect(segments, policy, "openai")  # type: ignore[arg-type]
            await guard.judge(inspection, policy, "default", "openai")
        return time.perf_counter() - started

    await guard_all([parse(b)[0] for b in warm])  # type: ignore[index]
    guard_s = await guard_all(parsed)

    def timed(step: Callable[[int], object]) -> float:
        started = time.perf_counter()
        for i in range(requests):
            step(i)
        return time.perf_counter() - started

    for b in warm:
        parse(b)
    parse_s = timed(lambda i: parse(bodies[i]))
    headers_s = timed(lambda i: request_headers(headers, strip_credentials=False))
    record = {
        "request_id": "r",
        "method": "POST",
        "upstream": "openai",
        "path": CHAT,
        "team": "default",
        "decision": "allow",
        "category": "none",
        "policy_version": "reef-v1",
        "status": 200,
        "outcome": "ok",
        "upstream_status": 200,
        "upstream_ms": 1.234,
        "latency_ms": 2.345,
    }
    with AuditLog(tmp / "stages-audit.jsonl") as log:
        audit_s = timed(lambda i: log.append("request", {**record, "request_id": f"r{i}"}))
    return {
        name: seconds * 1e6 / requests
        for name, seconds in (
            ("parse", parse_s),
            ("guard", guard_s),
            ("audit", audit_s),
            ("headers", headers_s),
        )
    }


async def session_us(config_dir: Path, bodies: list[bytes], memo: bool) -> list[float]:
    """Microseconds of parse and guard for each turn of one agent session, in order.

    A fresh guard and an empty memo of the JSON reader's repeated parts
    (`jsontext._memo_loads`) start the session; with ``memo`` False the
    reader parses every body whole, as it did before the memo.
    """
    from gateway.app import build_guard
    from gateway.config.loader import load
    from gateway.wire import jsontext
    from gateway.wire.body import decode_content, request_segments

    config = load(config_dir, environ={})
    guard = build_guard(config)
    policy = guard.policy("default")
    split = jsontext._SPLIT
    jsontext._MEMO.clear()
    jsontext._SPLIT = split if memo else None
    out: list[float] = []
    try:
        for body in bodies:
            started = time.perf_counter()
            segments, _ = request_segments(
                CHAT, "", "application/json", decode_content(body, "", 1 << 25)
            )
            inspection = await guard.inspect(segments, policy, "openai")
            await guard.judge(inspection, policy, "default", "openai")
            out.append((time.perf_counter() - started) * 1e6)
    finally:
        jsontext._SPLIT = split
        jsontext._MEMO.clear()
    return out


if __name__ == "__main__":
    import sys
    import tempfile

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        n = int(sys.argv[1]) if sys.argv[1:] else 2000
        result = asyncio.run(stage_us(root / "config", Path(tmp), n))
    print(json.dumps({k: round(v, 1) for k, v in result.items()}))
