"""Gateway memory with 1,000 streamed answers open at once.

The fake upstream sends the first SSE event of every stream and then holds it
open; the benchmark opens 1,000 streams through `reefgate serve` (shipped
config), waits until each has delivered its first event, and reads the
gateway's VmRSS from /proc/PID/status while all of them are open. The bare
aiohttp proxy gets the same treatment as a reference. Every request is the
~4 KB agent turn of the overhead benchmark, so each stream was also scanned.

MB here is 10^6 bytes (VmRSS is reported by the kernel in KiB).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp

from bench._common import (
    REEFGATE_READY,
    SERVICE_READY,
    Options,
    Report,
    Service,
    Services,
    Target,
    clean_number,
    gateway_config,
    install_signal_handlers,
    machine_info,
    parse_options,
    progress,
    python_module,
    raise_nofile,
    reefgate_argv,
    rss_kb,
    run_async,
    table,
    targets_json,
    targets_table,
    workdir,
)
from bench._corpus import AgentTurns
from bench._loadgen import HEADERS

CHAT = "/openai/v1/chat/completions"


def _mb(kib: int) -> float:
    return kib * 1024 / 1e6


def _fds(pid: int) -> int:
    try:
        return len(list(Path(f"/proc/{pid}/fd").iterdir()))
    except OSError:
        return -1


async def _hold_streams(
    svc: Service, streams: int, turns: AgentTurns, tag: str, settle_s: float
) -> dict[str, Any]:
    url = svc.url + CHAT
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # Warm the process up first, so the idle figure is steady state, not import time.
        for n in range(20):
            async with session.post(
                url, data=turns.body(n, f"{tag}w", False), headers=HEADERS
            ) as r:
                await r.read()
        await asyncio.sleep(0.5)
        idle = rss_kb(svc.pid)
        idle_fds = _fds(svc.pid)

        opened: list[aiohttp.ClientResponse] = []
        failures: list[str] = []
        gate = asyncio.Semaphore(64)

        async def open_one(n: int) -> None:
            async with gate:
                try:
                    resp = await session.post(url, data=turns.body(n, tag, True), headers=HEADERS)
                    first = await resp.content.readany()
                    if resp.status != 200 or not first.startswith(b"data:"):
                        failures.append(f"HTTP {resp.status}: {first[:120]!r}")
                        resp.close()
                        return
                    opened.append(resp)
                except (aiohttp.ClientError, TimeoutError) as exc:
                    failures.append(f"{type(exc).__name__}: {exc}")

        started = time.perf_counter()
        tasks = [asyncio.create_task(open_one(n)) for n in range(streams)]
        try:
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=180)
            open_s = time.perf_counter() - started
            await asyncio.sleep(settle_s)
            still_open = sum(1 for r in opened if not r.closed and not r.content.at_eof())
            loaded = rss_kb(svc.pid)
            peak = rss_kb(svc.pid, "VmHWM")
            fds = _fds(svc.pid)
        finally:
            for t in tasks:
                t.cancel()
            for resp in opened:
                resp.close()
    return {
        "streams_requested": streams,
        "streams_open": still_open,
        "failures": len(failures),
        "failure_sample": failures[0] if failures else None,
        "open_s": round(open_s, 3),
        "idle_rss_mb": round(_mb(idle), 2),
        "rss_mb": round(_mb(loaded), 2),
        "peak_rss_mb": round(_mb(peak), 2),
        "per_stream_kb": round((loaded - idle) * 1.024 / max(1, still_open), 2),
        "fds_idle": idle_fds,
        "fds_open": fds,
    }


async def _run(opts: Options, streams: int, hold_s: float) -> dict[str, dict[str, Any]]:
    turns = AgentTurns(variants=64)
    out: dict[str, dict[str, Any]] = {}
    with workdir("memory") as tmp, Services(tmp) as services:
        upstream = services.spawn(
            "fake-upstream",
            python_module("bench.fake_upstream", "--hold-s", str(hold_s), "--max-s", "900"),
        )
        services.wait_line(upstream, SERVICE_READY, 30)
        config = gateway_config(tmp / "config", upstream.url)
        gateway = services.spawn("reefgate", reefgate_argv(config), cwd=tmp)
        bare = services.spawn(
            "bare-proxy", python_module("bench.bare_proxy", "--upstream", upstream.url)
        )
        services.wait_line(gateway, REEFGATE_READY, 60)
        services.wait_line(bare, SERVICE_READY, 30)
        settle = 0.5 if opts.smoke else 2.0
        for name, svc in (("reefgate", gateway), ("bare", bare)):
            progress(f"{name}: opening {streams} streams")
            try:
                out[name] = await _hold_streams(svc, streams, turns, name, settle)
            except Exception:
                print(f"--- {name} log tail ---\n{svc.tail()}", flush=True)
                raise
            # Let the closed streams drain before the next process is measured.
            await asyncio.sleep(0.5)
    return out


def main(argv: Sequence[str]) -> int:
    opts = parse_options("memory", argv)
    install_signal_handlers()
    raise_nofile()
    streams = 20 if opts.smoke else 1000
    hold_s = 60.0 if opts.smoke else 600.0
    results = run_async(_run(opts, streams, hold_s))

    reef = results["reefgate"]
    complete = reef["streams_open"] == streams and not reef["failures"]
    value = reef["rss_mb"] if complete else None
    reasons: dict[str, str] = {}
    if value is None:
        reasons["rss_mb_1000_streams"] = (
            f"only {reef['streams_open']} of {streams} streams were open "
            f"({reef['failures']} failed: {reef['failure_sample']})"
        )
    rows = [
        [
            name,
            r["streams_open"],
            r["failures"],
            r["open_s"],
            r["idle_rss_mb"],
            r["rss_mb"],
            r["peak_rss_mb"],
            r["per_stream_kb"],
            r["fds_open"],
        ]
        for name, r in results.items()
    ]
    rep = Report(f"memory: RSS with {streams} open streamed responses")
    info = machine_info()
    rep.add(
        "setup",
        "\n".join(
            [
                f"mode {opts.mode}; each stream: a ~4.5 KB agent turn, stream: true; the fake "
                "upstream sends one event and holds the stream open",
                "RSS from /proc/PID/status (VmRSS; peak = VmHWM) once every stream has "
                "delivered its first event; MB = 10^6 bytes",
            ]
        ),
    )
    rep.add(
        "results",
        table(
            [
                "process",
                "open",
                "failed",
                "open s",
                "idle MB",
                "RSS MB",
                "peak MB",
                "KB/stream",
                "fds",
            ],
            rows,
            digits=2,
        ),
    )
    targets = [
        Target(
            f"gateway RSS, {streams} open streams",
            value,
            "<=",
            150,
            "MB",
            reasons.get("rss_mb_1000_streams", ""),
        )
    ]
    rep.add("targets", targets_table(targets))
    rep.data = {
        "benchmark": "memory",
        "mode": opts.mode,
        "streams": streams,
        "rss_mb_1000_streams": value,
        "idle_rss_mb": reef["idle_rss_mb"],
        "per_stream_kb": reef["per_stream_kb"],
        "bare_rss_mb": clean_number(results["bare"]["rss_mb"], 2),
        "results": results,
        "targets": targets_json(targets),
        "machine": info,
        "null_reasons": reasons,
    }
    rep.emit(opts.json)
    return 0
