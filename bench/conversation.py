"""What a long agent session costs the guard: bytes scanned and classifier calls per turn.

A 100-turn conversation goes through `reefgate serve` (the shipped config plus
an LLM classifier, provider openai, pointed at an in-process fake that counts
its calls). Turn 1 sends the system prompt and the task; every later turn
resends the whole history plus the two things an agent loop adds: the
model's last answer (an assistant tool call) and that tool's result. The
gateway's `/metrics` is read before and after every turn.

Expected classifier calls are counted by the benchmark itself from what it
sends: one outbound check per text never sent before, plus one inbound check
when that text is untrusted (a tool result). The "by design" bytes figure
replays the gateway's caching rule (each distinct text is counted once, when
both deterministic detectors first inspect it; texts under `_CACHE_MIN_CHARS`
of gateway/guard/pipeline.py are rescanned rather than hashed), so a
difference from it points at a bug rather than at the rule.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from bench import _corpus as corpus
from bench._common import (
    REEFGATE_READY,
    ROOT,
    Options,
    Report,
    Services,
    Target,
    clean_number,
    gateway_config,
    install_signal_handlers,
    machine_info,
    median,
    parse_options,
    progress,
    reefgate_argv,
    run_async,
    table,
    targets_json,
    targets_table,
    workdir,
)
from bench._stages import session_us
from bench.fake_upstream import COMPLETION

PINNED = "gpt-4.1-2025-04-14"
KEY_ENV = "REEFGATE_BENCH_CLASSIFIER_KEY"
PATH = "/v1/chat/completions"


def _cache_min_chars() -> int:
    """The gateway's rule: texts shorter than this are rescanned rather than hashed."""
    from gateway.guard import pipeline

    value = getattr(pipeline, "_CACHE_MIN_CHARS", 512)
    return value if isinstance(value, int) else 512


CACHE_MIN_CHARS = _cache_min_chars()


@dataclass
class FakeClassifier:
    calls: list[tuple[str, str]] = field(default_factory=list)

    async def respond(self, request: web.Request) -> web.Response:
        body = await request.json()
        guard = json.loads(body["input"])
        self.calls.append((guard["direction"], guard["text"]))
        verdict = {
            "decision": "allow",
            "category": "benign",
            "reason": "ok",
            "policyVersion": guard["policyVersion"],
        }
        return web.json_response(
            {
                "id": "resp_bench",
                "object": "response",
                "model": PINNED,
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [
                            {"type": "output_text", "text": json.dumps(verdict), "annotations": []}
                        ],
                    }
                ],
            }
        )


async def _upstream(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=COMPLETION, content_type="application/json")


def _segments(messages: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    """(text, untrusted) for every text of the request, as the benchmark models it."""
    out: list[tuple[str, bool]] = []
    for m in messages:
        untrusted = m["role"] == "tool"
        content = m.get("content")
        if isinstance(content, str) and content:
            out.append((content, untrusted))
        for call in m.get("tool_calls") or []:
            out.append((call["function"]["name"], untrusted))
            out.append((call["function"]["arguments"], untrusted))
    return out


def build_turns(turns: int, seed: int = corpus.SEED + 7) -> list[list[dict[str, Any]]]:
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": corpus.SYSTEM_PROMPT},
        {"role": "user", "content": corpus.prose(rng, 4)},
    ]
    out = [list(messages)]
    for n in range(1, turns):
        # Tool results vary: short acknowledgements as well as whole files.
        size = rng.randint(40, 400) if rng.random() < 0.3 else rng.randint(600, 4000)
        messages.append(corpus.tool_call(rng, n))
        messages.append(corpus.tool_result(corpus.tool_output(rng, size), n))
        out.append(list(messages))
    return out


_METRIC = re.compile(
    r"^(reefgate_bytes_scanned_total|reefgate_classifier_calls_total) (\S+)$", re.M
)


async def _metrics(session: aiohttp.ClientSession, url: str) -> tuple[int, int]:
    async with session.get(url + "/metrics") as resp:
        text = await resp.text()
    found = {m.group(1): round(float(m.group(2))) for m in _METRIC.finditer(text)}
    return found["reefgate_bytes_scanned_total"], found["reefgate_classifier_calls_total"]


@dataclass
class Turn:
    n: int
    messages: int
    body_bytes: int
    new_chars: int
    scanned: int
    calls: int
    expected_calls: int
    design_scanned: int
    status: int
    latency_ms: float


async def run(opts: Options, turns: int) -> tuple[list[Turn], dict[str, Any]]:
    fake = FakeClassifier()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/responses", fake.respond)
    app.router.add_post(PATH, _upstream)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    fake_url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    plan = build_turns(turns)
    out: list[Turn] = []
    seen_out: set[str] = set()
    seen_in: set[str] = set()
    floor_cached: set[str] = set()
    unique: set[str] = set()
    try:
        with workdir("conversation") as tmp, Services(tmp) as services:
            config = gateway_config(
                tmp / "config",
                fake_url,
                classifier={
                    "provider": "openai",
                    "base_url": fake_url,
                    "pinned_model": PINNED,
                    "api_key_env": KEY_ENV,
                    "timeout_ms": 10_000,
                },
            )
            gw = services.spawn(
                "reefgate", reefgate_argv(config), cwd=tmp, env={KEY_ENV: "sk-bench-classifier"}
            )
            services.wait_line(gw, REEFGATE_READY, 60)
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
                scanned0, calls0 = await _metrics(session, gw.url)
                for i, messages in enumerate(plan, 1):
                    if i % 20 == 0:
                        progress(f"turn {i}")
                    segs = _segments(messages)
                    texts = [(PATH, False), *segs]
                    expected = 0
                    design = 0
                    new_chars = 0
                    for text, untrusted in texts:
                        if text not in unique:
                            unique.add(text)
                            new_chars += len(text)
                        if len(text) < CACHE_MIN_CHARS or text not in floor_cached:
                            design += len(text)
                            if len(text) >= CACHE_MIN_CHARS:
                                floor_cached.add(text)
                        if text == PATH:
                            continue  # the request path gets the floor only
                        if text not in seen_out:
                            seen_out.add(text)
                            expected += 1
                        if untrusted and text not in seen_in:
                            seen_in.add(text)
                            expected += 1
                    body = json.dumps({"model": corpus.MODEL, "messages": messages}).encode()
                    t0 = time.perf_counter()
                    async with session.post(
                        gw.url + "/openai" + PATH,
                        data=body,
                        headers={"Content-Type": "application/json"},
                    ) as resp:
                        await resp.read()
                        status = resp.status
                    latency = (time.perf_counter() - t0) * 1000
                    scanned1, calls1 = await _metrics(session, gw.url)
                    out.append(
                        Turn(
                            i,
                            len(messages),
                            len(body),
                            new_chars,
                            scanned1 - scanned0,
                            calls1 - calls0,
                            expected,
                            design,
                            status,
                            latency,
                        )
                    )
                    scanned0, calls0 = scanned1, calls1
    finally:
        await runner.cleanup()
    extra = {
        "unique_chars": sum(len(t) for t in unique),
        "minimum_chars": sum(len(t) for t in seen_out | {PATH}),
        "fake_classifier_calls": len(fake.calls),
        "body_bytes_sent": sum(t.body_bytes for t in out),
    }
    return out, extra


async def _session(turns: int) -> dict[bool, list[float]]:
    """Parse and guard per turn in-process, with and without the JSON reader's memo."""
    bodies = [
        json.dumps({"model": corpus.MODEL, "messages": messages}).encode()
        for messages in build_turns(turns)
    ]
    out: dict[bool, list[float]] = {}
    # Without first, then with, then without again: the better of each pair
    # of runs counts, so the order favours neither.
    for memo in (False, True, False, True):
        times = await session_us(ROOT / "config", bodies, memo)
        if memo not in out or sum(times) < sum(out[memo]):
            out[memo] = times
    return out


def _over(i: int, session: dict[bool, list[float]]) -> float | None:
    return session[True][i] / session[False][i] if session[False][i] else None


def _total(session: dict[bool, list[float]]) -> float | None:
    return sum(session[True]) / sum(session[False]) if sum(session[False]) else None


def main(argv: Sequence[str]) -> int:
    opts = parse_options("conversation", argv)
    install_signal_handlers()
    turns = 8 if opts.smoke else 100
    result, extra = run_async(run(opts, turns))
    progress("parse and guard in-process, with and without the memo")
    session = run_async(_session(turns))

    later = result[1:]
    scanned = sum(t.scanned for t in result)
    unique = extra["unique_chars"]
    calls_per_turn = sum(t.calls for t in later) / len(later) if later else None
    expected_per_turn = sum(t.expected_calls for t in later) / len(later) if later else None
    mismatched = [t.n for t in result if t.calls != t.expected_calls]
    failed = [t for t in result if t.status != 200]
    design = sum(t.design_scanned for t in result)

    show = sorted({1, 2, 3, 4, 5, *range(10, len(result) + 1, 10), len(result)})
    rows = [
        [
            t.n,
            t.messages,
            t.body_bytes,
            t.new_chars,
            t.scanned,
            t.design_scanned,
            t.scanned / t.new_chars if t.new_chars else None,
            t.calls,
            t.expected_calls,
            t.status,
            t.latency_ms,
        ]
        for t in result
        if t.n in show
    ]
    rep = Report("conversation: bytes scanned and classifier calls per turn")
    info = machine_info()
    rep.add(
        "setup",
        "\n".join(
            [
                f"mode {opts.mode}; {len(result)} turns through reefgate serve (shipped config + "
                f"classifier provider openai, pinned {PINNED}, in-process fake)",
                "turn 1: system prompt + task; each later turn: whole history + the assistant's "
                "tool call + its tool result (30% of results under 400 chars)",
                "expected calls: 1 outbound per text never sent before + 1 inbound if it is a "
                "tool result; "
                f"by-design chars: the gateway's rule, texts < {CACHE_MIN_CHARS} chars rescanned",
                *(
                    [f"FAILED TURNS: {[(t.n, t.status) for t in failed]}"]
                    if failed
                    else ["every turn answered 200"]
                ),
            ]
        ),
    )
    rep.add(
        "per turn (selected)",
        table(
            [
                "turn",
                "msgs",
                "body B",
                "new chars",
                "scanned",
                "by design",
                "scanned/new",
                "calls",
                "expected",
                "status",
                "latency ms",
            ],
            rows,
            digits=2,
        ),
    )
    over_unique = scanned / unique if unique else None
    rep.add(
        "totals",
        table(
            ["quantity", "value"],
            [
                ["unique chars sent (distinct texts)", unique],
                ["request body bytes sent", extra["body_bytes_sent"]],
                ["chars scanned (metrics)", scanned],
                ["chars scanned, by design (replayed rule)", design],
                [
                    "minimum: each distinct text once",
                    extra["minimum_chars"],
                ],
                ["scanned / unique", over_unique],
                ["scanned / minimum", scanned / extra["minimum_chars"]],
                ["classifier calls (metrics)", sum(t.calls for t in result)],
                ["classifier calls (seen by the fake)", extra["fake_classifier_calls"]],
                ["expected calls", sum(t.expected_calls for t in result)],
                ["calls per turn after the first (measured)", calls_per_turn],
                ["calls per turn after the first (expected)", expected_per_turn],
                ["turns where calls != expected", len(mismatched)],
                ["median turn latency ms", median([t.latency_ms for t in result])],
            ],
            digits=3,
        ),
    )
    with_memo, without = session[True], session[False]
    rep.add(
        "parse + guard in-process, us per turn (shipped config, no classifier; "
        "best of two sessions each)",
        table(
            ["turn", "body B", "with the memo", "without", "with / without"],
            [
                [t.n, t.body_bytes, with_memo[t.n - 1], without[t.n - 1], _over(t.n - 1, session)]
                for t in result
                if t.n in show
            ]
            + [["all", extra["body_bytes_sent"], sum(with_memo), sum(without), _total(session)]],
            digits=2,
        ),
    )
    targets = [
        Target("bytes scanned / unique bytes", clean_number(over_unique, 3), "<=", 1.2),
        Target(
            "classifier calls per turn == expected",
            clean_number(calls_per_turn, 3),
            "==",
            clean_number(expected_per_turn, 3) or 0.0,
            note=f"{len(mismatched)} turn(s) differ" if mismatched else "every turn equal",
        ),
    ]
    rep.add("targets", targets_table(targets))
    reasons: dict[str, str] = {}
    if calls_per_turn is None:
        reasons["classifier_calls_per_turn"] = "fewer than two turns"
    rep.data = {
        "benchmark": "conversation",
        "mode": opts.mode,
        "turns": len(result),
        "bytes_scanned_over_unique": clean_number(over_unique, 4),
        "parse_guard_us_with_memo": clean_number(sum(with_memo), 1),
        "parse_guard_us_without_memo": clean_number(sum(without), 1),
        "classifier_calls_per_turn": clean_number(calls_per_turn, 4),
        "expected_classifier_calls_per_turn": clean_number(expected_per_turn, 4),
        "classifier_calls_mismatched_turns": mismatched,
        "bytes_scanned": scanned,
        "bytes_scanned_by_design": design,
        "unique_chars": unique,
        "minimum_chars": extra["minimum_chars"],
        "bytes_scanned_over_minimum": clean_number(scanned / extra["minimum_chars"], 4),
        "fake_classifier_calls": extra["fake_classifier_calls"],
        "failed_turns": [t.n for t in failed],
        "per_turn": {
            "scanned": [t.scanned for t in result],
            "new_chars": [t.new_chars for t in result],
            "calls": [t.calls for t in result],
            "expected_calls": [t.expected_calls for t in result],
            "latency_ms": [clean_number(t.latency_ms, 3) for t in result],
        },
        "targets": targets_json(targets),
        "machine": info,
        "null_reasons": reasons,
    }
    rep.emit(opts.json)
    return 0
