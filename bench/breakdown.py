"""Where reefgate's CPU per request goes: the overhead request, stage by stage.

The overhead benchmark's request (a ~4.5 KB agent turn with a new user
message and tool result every time) goes through the bare aiohttp proxy and
through six builds of `reefgate serve` on the shipped config, each with one
more stage switched off (see bench/ablated.py): the full gateway; without
the injection detector; without both detectors; without the guard; without
the guard and body parsing; without those and the audit write. The
differences in CPU per request, in the same run, are what each stage costs;
what remains over the bare proxy is routing, team matching, key custody,
headers and metrics.

Two direct readings go with the differences: the in-process stage timers
(bench/_stages.py, the gateway's functions in a loop, no HTTP) and, for the
full gateway at c=50, its own `reefgate_guard_seconds` histogram (arrival to
verdict: decoding, parsing, segments and the guard) read from /metrics before
and after each run. The second is what the first costs inside a busy server,
where other requests' work runs between one request's steps.

Like `overhead`, each server is pinned to core 0 and the fake upstream and
load generator to core 1; c=50 runs with wrk when installed, c=1 with the
in-repo client, rounds interleaved, medians over rounds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench import _loadgen as lg
from bench._common import (
    LOAD_CPU,
    PROXY_CPU,
    REEFGATE_READY,
    ROOT,
    SERVICE_READY,
    Options,
    Report,
    Service,
    Services,
    Target,
    clean_number,
    describe_machine,
    gateway_config,
    machine_info,
    median,
    progress,
    python_module,
    run_service_bench,
    table,
    targets_json,
    targets_table,
    tree_cpu_s,
)
from bench._corpus import AgentTurns
from bench._stages import stage_us

CHAT = "/v1/chat/completions"
# The gateway's own timer, from a request's arrival to its verdict: body
# decoding, parsing, segments and the guard, as they run inside the server.
_GUARD_SECONDS = re.compile(r"^reefgate_guard_seconds_(sum|count) (\S+)$", re.M)

# name, stages switched off, label
VARIANTS: tuple[tuple[str, str, str], ...] = (
    ("reefgate", "", "reefgate, shipped config"),
    ("no_injection", "injection", "without the injection detector"),
    ("no_detectors", "injection,secrets", "without both detectors"),
    ("no_guard", "guard", "without the guard"),
    ("no_parse", "guard,parse", "without guard and parsing"),
    ("core", "guard,parse,audit", "without guard, parsing and audit"),
)
# The stage whose cost is the difference between a variant and the next one.
STAGES = (
    ("injection detector", "reefgate", "no_injection"),
    ("secret scan", "no_injection", "no_detectors"),
    ("guard pipeline: caches, verdicts", "no_detectors", "no_guard"),
    ("parse", "no_guard", "no_parse"),
    ("audit", "no_parse", "core"),
    ("proxy core over the bare proxy", "core", "bare"),
)


@dataclass
class Server:
    name: str
    url: str = ""
    base: str = ""
    service: Service | None = None
    c50: list[lg.RunResult] = field(default_factory=list)
    c1: list[lg.RunResult] = field(default_factory=list)
    # Microseconds per request from arrival to verdict at c=50 (reefgate only).
    inspect_us: list[float] = field(default_factory=list)

    def cpu(self) -> float:
        return median([r.cpu_ms_per_req for r in self.c50]) if self.c50 else math.nan

    def rps(self) -> float:
        return median([r.rps for r in self.c50]) if self.c50 else math.nan

    def p50_c1(self) -> float:
        return median([r.p50 for r in self.c1]) if self.c1 else math.nan


@dataclass(frozen=True)
class Plan:
    rounds: int
    c1_s: float
    c50_s: int

    @staticmethod
    def for_mode(opts: Options) -> Plan:
        if opts.smoke:
            return Plan(1, 1.0, 1)
        if opts.quick:
            return Plan(1, 2.0, 3)
        return Plan(3, 3.0, 6)


class Bench:
    def __init__(self, opts: Options, services: Services, tmp: Path) -> None:
        self.opts = opts
        self.plan = Plan.for_mode(opts)
        self.services = services
        self.tmp = tmp
        self.turns = AgentTurns()
        self.wrk = None if opts.smoke else lg.wrk_path()
        self.script: Path | None = None
        self.servers: dict[str, Server] = {
            name: Server(name) for name in ("direct", "bare", *(v[0] for v in VARIANTS))
        }
        self.run_no = 0
        self.stages: dict[str, float] = {}

    def start(self) -> None:
        svc = self.services
        upstream = svc.spawn("fake-upstream", python_module("bench.fake_upstream"), cpu=LOAD_CPU)
        svc.wait_line(upstream, SERVICE_READY, 30)
        self.servers["direct"].url, self.servers["direct"].service = upstream.url + CHAT, upstream
        bare = svc.spawn(
            "bare-proxy",
            python_module("bench.bare_proxy", "--upstream", upstream.url),
            cpu=PROXY_CPU,
        )
        svc.wait_line(bare, SERVICE_READY, 30)
        self.servers["bare"].url = bare.url + "/openai" + CHAT
        self.servers["bare"].service = bare
        for name, without, _ in VARIANTS:
            config = gateway_config(self.tmp / f"config-{name}", upstream.url)
            argv = python_module(
                "bench.ablated",
                "--without",
                without,
                "serve",
                "--config",
                str(config),
                "--port",
                "0",
            )
            # From the work directory like `overhead` runs reefgate; bench/ is not installed.
            gateway = svc.spawn(
                name, argv, cpu=PROXY_CPU, cwd=self.tmp, env={"PYTHONPATH": str(ROOT)}
            )
            svc.wait_line(gateway, REEFGATE_READY, 60)
            self.servers[name].url = gateway.url + "/openai" + CHAT
            self.servers[name].base = gateway.url
            self.servers[name].service = gateway

    def _tag(self) -> str:
        self.run_no += 1
        return f"b{self.run_no}"

    async def measure(self, server: Server, c: int, seconds: float) -> lg.RunResult:
        assert server.service is not None
        tag = self._tag()
        timed = server.name == "reefgate" and c > 1
        if timed:
            guard_before = await _guard_seconds(server.base)
        before = tree_cpu_s(server.service.pid)
        if c > 1 and self.wrk is not None:
            if self.script is None:
                self.script = lg.write_lua(self.tmp / "turns.lua", self.turns, False)
            result = lg.wrk_run(
                server.url, self.script, concurrency=c, duration_s=int(seconds), tag=tag
            )
        else:
            result = await lg.client_run(
                server.url,
                lambda n: self.turns.body(n, tag, False),
                stream=False,
                concurrency=c,
                duration_s=seconds,
                max_requests=50 if self.opts.smoke else 1_000_000,
            )
        if result.errors or result.requests == 0:
            raise RuntimeError(f"{server.name} c={c}: {result.error_sample or 'no answers'}")
        result.cpu_ms_per_req = (tree_cpu_s(server.service.pid) - before) * 1000 / result.requests
        if timed:
            total, count = await _guard_seconds(server.base)
            total, count = total - guard_before[0], count - guard_before[1]
            if count > 0:
                server.inspect_us.append(total * 1e6 / count)
        return result

    async def run(self) -> None:
        # In-process timers first, while nothing else runs on the machine.
        progress("in-process stage timers")
        requests = 100 if self.opts.smoke else 1000 if self.opts.quick else 3000
        self.stages = await stage_us(ROOT / "config", self.tmp, requests)
        order = list(self.servers.values())
        for r in range(self.plan.rounds):
            # Rotating the order spreads drift over every variant.
            shift = r % len(order)
            for server in order[shift:] + order[:shift]:
                progress(f"round {r + 1}: {server.name}")
                server.c1.append(await self.measure(server, 1, self.plan.c1_s))
                if server.name != "direct":
                    server.c50.append(await self.measure(server, 50, self.plan.c50_s))

    def report(self) -> Report:
        rep = Report("breakdown: reefgate's CPU per request, stage by stage")
        info = machine_info()
        t = self.servers
        bare = t["bare"]
        direct_p50 = t["direct"].p50_c1()
        load = f"wrk {lg.wrk_version()} (-t1)" if self.wrk else "in-repo aiohttp client"
        rep.add(
            "setup",
            "\n".join(
                [
                    f"mode {self.opts.mode}; {describe_machine(info)}",
                    f"servers pinned to core {PROXY_CPU}, fake upstream and load to {LOAD_CPU}",
                    f"request: {len(self.turns.body(0, 'x', False))} B, non-streamed; "
                    f"c=50 by {load}, c=1 by the in-repo client; {self.plan.rounds} round(s)",
                    "cpu ms/req: the server's own CPU time per answered request",
                ]
            ),
        )
        rows: list[list[object]] = []
        data_cpu: dict[str, float | None] = {}
        data_rps: dict[str, float | None] = {}
        data_added: dict[str, float | None] = {}
        for name, label in [("bare", "bare aiohttp proxy"), *((v[0], v[2]) for v in VARIANTS)]:
            cpu, rps = t[name].cpu(), t[name].rps()
            added = t[name].p50_c1() - direct_p50
            data_cpu[name] = clean_number(cpu)
            data_rps[name] = clean_number(rps, 1)
            data_added[name] = clean_number(added)
            rows.append([label, cpu, rps, _ratio(rps, bare.rps()), _ratio(bare.cpu(), cpu), added])
        rep.add(
            "servers",
            table(
                [
                    "server",
                    "cpu ms/req c=50",
                    "rps c=50",
                    "rps / bare",
                    "rps per CPU / bare",
                    "+p50 ms c=1",
                ],
                rows,
                digits=3,
            ),
        )
        excess = t["reefgate"].cpu() - bare.cpu()
        stage_rows: list[list[object]] = []
        data_stage: dict[str, float | None] = {}
        for stage, a, b in STAGES:
            cost = t[a].cpu() - t[b].cpu()
            data_stage[stage] = clean_number(cost)
            stage_rows.append([stage, cost * 1000, cost / excess if excess > 0 else None])
        rep.add(
            "stages (difference in CPU per request between neighbouring servers)",
            table(["stage", "cpu us/req", "share of excess over bare"], stage_rows, digits=2),
        )
        rep.add(
            "in-process stage timers (the gateway's own functions, same turns, no HTTP)",
            table(
                ["stage", "us/request"],
                [[name, value] for name, value in self.stages.items()],
                digits=1,
            ),
        )
        in_server = t["reefgate"].inspect_us
        inspect_us = median(in_server) if in_server else math.nan
        in_process = self.stages.get("parse", math.nan) + self.stages.get("guard", math.nan)
        rep.add(
            "in the server at c=50 (the gateway's reefgate_guard_seconds, arrival to verdict)",
            table(
                ["stage", "us/request", "over in-process parse + guard"],
                [["parse + guard", inspect_us, _ratio(inspect_us, in_process)]],
                digits=2,
            ),
        )
        ratio_full = clean_number(_ratio(t["reefgate"].rps(), bare.rps()), 3)
        ratio_no_guard = clean_number(_ratio(t["no_guard"].rps(), bare.rps()), 3)
        bare_added = bare.p50_c1() - direct_p50
        added_ratio = clean_number(_ratio(t["reefgate"].p50_c1() - direct_p50, bare_added), 3)
        targets = [
            Target(
                "guard us/request (in-process timer)",
                clean_number(self.stages.get("guard", math.nan), 1),
                "<=",
                100.0,
            ),
            Target("rps / bare proxy, c=50: reefgate", ratio_full, ">=", 0.55),
            Target(
                "added p50 at c=1: reefgate / bare proxy",
                added_ratio,
                "<=",
                1.8,
                note="latency each adds over calling the upstream directly",
            ),
            Target(
                "rps / bare proxy, c=50: without the guard",
                ratio_no_guard,
                ">=",
                0.8,
                note="what a zero-cost guard would reach",
            ),
        ]
        rep.add("targets", targets_table(targets))
        rep.data = {
            "benchmark": "breakdown",
            "mode": self.opts.mode,
            "cpu_ms_per_req_c50": data_cpu,
            "rps_c50": data_rps,
            "added_p50_ms_c1": data_added,
            "stage_cpu_ms": data_stage,
            "rps_vs_bare_c50": ratio_full,
            "rps_vs_bare_c50_without_guard": ratio_no_guard,
            "added_p50_c1_vs_bare": added_ratio,
            "stage_us_in_process": {k: clean_number(v, 1) for k, v in self.stages.items()},
            "inspect_us_in_server_c50": clean_number(inspect_us, 1),
            "targets": targets_json(targets),
            "null_reasons": {
                key: "the bare proxy answered nothing at c=50"
                for key, value in (
                    ("rps_vs_bare_c50", ratio_full),
                    ("rps_vs_bare_c50_without_guard", ratio_no_guard),
                )
                if value is None
            }
            | (
                {"added_p50_c1_vs_bare": "the bare proxy added no measurable latency at c=1"}
                if added_ratio is None
                else {}
            )
            | (
                {"inspect_us_in_server_c50": "the gateway timed no request at c=50"}
                if clean_number(inspect_us, 1) is None
                else {}
            ),
            "machine": info,
        }
        return rep


async def _guard_seconds(base: str) -> tuple[float, float]:
    """(sum, count) of the gateway's reefgate_guard_seconds histogram."""
    async with aiohttp.ClientSession() as session, session.get(base + "/metrics") as resp:
        text = await resp.text()
    found = {m.group(1): float(m.group(2)) for m in _GUARD_SECONDS.finditer(text)}
    return found.get("sum", 0.0), found.get("count", 0.0)


def _ratio(a: float, b: float) -> float | None:
    # A smoke run answers so few requests that the CPU clock can read zero.
    return a / b if b > 0 else None


def main(argv: Sequence[str]) -> int:
    return run_service_bench("breakdown", argv, Bench)
