"""What the gateway adds to an agent's request, next to other proxies on the same machine.

The same load goes (a) straight to the fake upstream, (b) through a bare
aiohttp pass-through proxy, (c) through `reefgate serve` with the shipped
config, (d) through nginx `proxy_pass` and (e) through the LiteLLM proxy. Each
request is a ~4 KB, 10-message agent turn whose last user message and tool
result are new every time, so the gateway scans fresh text on every request.

The proxy under test runs alone on core 0; the fake upstream and the load
generator share core 1. Concurrency 1 is measured with the in-repo client
(per-request latency and time to first byte); 10 and 50 with wrk when it is
installed. Rounds are interleaved and each figure is the median over rounds.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import _loadgen as lg
from bench import _peers as peers
from bench._common import (
    ALL_CPUS,
    LOAD_CPU,
    PROXY_CPU,
    REEFGATE_READY,
    SERVICE_READY,
    Options,
    Report,
    Service,
    Services,
    StartError,
    Target,
    clean_number,
    describe_machine,
    gateway_config,
    loadavg,
    machine_info,
    progress,
    python_module,
    reefgate_argv,
    run_service_bench,
    table,
    targets_json,
    targets_table,
    tree_cpu_s,
)
from bench._corpus import MODEL, AgentTurns

CHAT = "/v1/chat/completions"
CONCURRENCY = (1, 10, 50)
ORDER = ("direct", "bare", "reefgate", "nginx", "litellm")


@dataclass(frozen=True)
class Plan:
    rounds: int
    c1_s: float
    wrk_s: int
    warmup_s: float
    max_requests: int
    litellm_concurrency: tuple[int, ...]

    @staticmethod
    def for_mode(opts: Options) -> Plan:
        if opts.smoke:
            return Plan(1, 3.0, 1, 0.0, 8, CONCURRENCY)
        if opts.quick:
            return Plan(1, 1.0, 1, 0.3, 1_000_000, (10,))
        return Plan(3, 4.0, 5, 1.5, 1_000_000, CONCURRENCY)


@dataclass
class Endpoint:
    name: str
    label: str
    url: str = ""
    reason: str = ""
    service: Service | None = None
    runs: dict[tuple[bool, int], list[lg.RunResult]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.url) and not self.reason


class Bench:
    def __init__(self, opts: Options, services: Services, tmp: Path) -> None:
        self.opts = opts
        self.plan = Plan.for_mode(opts)
        self.services = services
        self.tmp = tmp
        self.turns = AgentTurns()
        self.run_no = 0
        self.wrk = lg.wrk_path()
        self.scripts: dict[bool, Path] = {}
        self.endpoints = {
            "direct": Endpoint("direct", "(a) direct to the fake upstream"),
            "bare": Endpoint("bare", "(b) bare aiohttp proxy"),
            "reefgate": Endpoint("reefgate", "(c) reefgate serve, shipped config"),
            "nginx": Endpoint("nginx", "(d) nginx proxy_pass"),
            "litellm": Endpoint("litellm", "(e) LiteLLM proxy"),
        }
        self.notes: list[str] = []
        self.load_at_start = loadavg()
        self.workers: int = opts.extra.workers
        self._litellm_path = ""

    # -- starting everything --

    def start(self) -> None:
        svc = self.services
        upstream = svc.spawn("fake-upstream", python_module("bench.fake_upstream"), cpu=LOAD_CPU)
        svc.wait_line(upstream, SERVICE_READY, 30)
        ep = self.endpoints
        ep["direct"].url = upstream.url + CHAT
        ep["direct"].service = upstream

        bare = svc.spawn(
            "bare-proxy",
            python_module("bench.bare_proxy", "--upstream", upstream.url),
            cpu=PROXY_CPU,
        )
        config = gateway_config(self.tmp / "reefgate-config", upstream.url)
        workers = self.workers
        gateway = svc.spawn(
            "reefgate",
            reefgate_argv(config, workers),
            # Several workers are there to use more than one core.
            cpu=PROXY_CPU if workers == 1 else ALL_CPUS,
            cwd=self.tmp,
        )
        svc.wait_line(bare, SERVICE_READY, 30)
        if workers == 1:
            svc.wait_line(gateway, REEFGATE_READY, 60)
        else:
            for worker in range(1, workers + 1):
                ready = REEFGATE_READY + rf" \(config: [^;)]*; worker {worker}\)"
                svc.wait_line(gateway, ready, 60)
            self.notes.append(
                f"reefgate ran {workers} workers (serve --workers {workers}) on every core, "
                "sharing them with the fake upstream and the load generator"
            )
        ep["bare"].url, ep["bare"].service = bare.url + "/openai" + CHAT, bare
        ep["reefgate"].url, ep["reefgate"].service = gateway.url + "/openai" + CHAT, gateway

        nginx = peers.apt_install("nginx", "nginx", self.opts.install)
        if nginx.ok:
            try:
                n = peers.start_nginx(svc, nginx.path, self.tmp / "nginx", upstream.port)
                ep["nginx"].url, ep["nginx"].service = n.url + "/openai" + CHAT, n
            except StartError as exc:
                ep["nginx"].reason = f"nginx did not start: {str(exc).splitlines()[0]}"
        else:
            ep["nginx"].reason = nginx.reason

        if self.wrk is None and not self.opts.smoke:
            wrk = peers.apt_install("wrk", "wrk", self.opts.install)
            self.wrk = wrk.path if wrk.ok else None
            if not wrk.ok:
                self.notes.append(f"wrk unavailable ({wrk.reason}): the in-repo client runs c>1")

        litellm = peers.prepare_litellm(self.opts.install)
        if not litellm.ok:
            ep["litellm"].reason = litellm.reason
        else:
            ep["litellm"].reason = "not started yet"
            self._litellm_path = litellm.path
            if self.opts.smoke:
                # Its ~15 s boot overlaps the other runs; timing is not measured in smoke.
                self._boot_litellm(cpu=None)

    def _boot_litellm(self, cpu: int | None) -> None:
        progress("starting LiteLLM")
        ep = self.endpoints["litellm"]
        upstream = self.endpoints["direct"].service
        assert upstream is not None
        ep.service = peers.start_litellm(
            self.services, self._litellm_path, self.tmp / "litellm", upstream.url, MODEL, cpu=cpu
        )

    def _ready_litellm(self) -> None:
        ep = self.endpoints["litellm"]
        if ep.service is None:
            return
        try:
            peers.wait_litellm(self.services, ep.service)
        except StartError as exc:
            ep.reason = f"LiteLLM did not start: {str(exc).splitlines()[0]}"
            tail = ep.service.tail(3).replace("\n", " | ")
            self.notes.append(f"LiteLLM log tail: {tail[:300]}")
            return
        ep.url = ep.service.url + CHAT
        ep.reason = ""
        progress("LiteLLM ready")

    # -- measuring --

    def _tag(self) -> str:
        self.run_no += 1
        return f"r{self.run_no}-{int(time.time())}"

    def _body(self, tag: str, stream: bool) -> Callable[[int], bytes]:
        turns = self.turns
        return lambda n: turns.body(n, tag, stream)

    async def _client(
        self, ep: Endpoint, stream: bool, c: int, seconds: float, max_requests: int = 0
    ) -> lg.RunResult:
        return await lg.client_run(
            ep.url,
            self._body(self._tag(), stream),
            stream=stream,
            concurrency=c,
            duration_s=seconds,
            max_requests=max_requests or self.plan.max_requests,
        )

    def _wrk(self, ep: Endpoint, stream: bool, c: int, seconds: int) -> lg.RunResult:
        if stream not in self.scripts:
            self.scripts[stream] = lg.write_lua(
                self.tmp / f"turns-{'sse' if stream else 'json'}.lua", self.turns, stream
            )
        return lg.wrk_run(
            ep.url, self.scripts[stream], concurrency=c, duration_s=seconds, tag=self._tag()
        )

    async def check(self, ep: Endpoint) -> None:
        """One request of each kind; a peer that answers wrong is reported, not measured."""
        for stream in (False, True):
            result = await self._client(ep, stream, 1, 30.0, max_requests=2)
            if result.errors or result.requests == 0:
                kind = "streamed" if stream else "plain"
                ep.reason = f"{kind} request failed: {result.error_sample}"
                return

    async def measure(self, ep: Endpoint, stream: bool, c: int) -> None:
        plan = self.plan
        progress(f"{ep.name} {'sse' if stream else 'json'} c={c}")
        assert ep.service is not None
        cpu_before = tree_cpu_s(ep.service.pid)
        if c == 1 or self.wrk is None or self.opts.smoke:
            # A bounded closed loop even when wrk is missing.
            result = await self._client(ep, stream, c, plan.c1_s if c == 1 else plan.wrk_s)
        else:
            # wrk blocks the loop, which has nothing else to do meanwhile.
            result = self._wrk(ep, stream, c, plan.wrk_s)
        if result.requests:
            spent = tree_cpu_s(ep.service.pid) - cpu_before
            result.cpu_ms_per_req = spent * 1000 / result.requests
        ep.runs.setdefault((stream, c), []).append(result)

    async def run(self) -> None:
        plan = self.plan
        for name in ("direct", "bare", "reefgate", "nginx"):
            ep = self.endpoints[name]
            if ep.ok:
                await self.check(ep)
                if ep.reason and name in ("direct", "bare", "reefgate"):
                    raise RuntimeError(f"{ep.label}: {ep.reason}")
        main = [self.endpoints[n] for n in ("direct", "bare", "reefgate", "nginx")]
        main = [e for e in main if e.ok]
        for ep in main:
            if plan.warmup_s:
                for stream in (False, True):
                    await self._client(ep, stream, 1, plan.warmup_s)
        for stream in (False, True):
            for c in CONCURRENCY:
                for r in range(plan.rounds):
                    # Rotating the order spreads any drift over every target.
                    shift = r % len(main)
                    for ep in main[shift:] + main[:shift]:
                        await self.measure(ep, stream, c)
        if self.opts.smoke and self.wrk is not None:
            # The wrk pipeline is checked once even in smoke, against the gateway,
            # which parses the Lua-built bodies as JSON (the fake upstream does not).
            result = self._wrk(self.endpoints["reefgate"], False, 10, 1)
            # A socket error as wrk stops is not the pipeline's fault; a non-2xx answer is.
            if result.requests == 0 or result.status_errors:
                raise RuntimeError(f"wrk self-check failed: {result.error_sample}")
            self.notes.append(
                f"wrk self-check: {result.requests} answers in 1 s, {result.errors} errors"
            )

        lite = self.endpoints["litellm"]
        if lite.reason == "not started yet":
            if lite.service is None:
                self._boot_litellm(cpu=PROXY_CPU)
            self._ready_litellm()
            if lite.ok:
                await self.check(lite)
            if lite.ok:
                if plan.warmup_s:
                    for stream in (False, True):
                        await self._client(lite, stream, 1, plan.warmup_s)
                for stream in (False, True):
                    for c in plan.litellm_concurrency:
                        for _ in range(plan.rounds):
                            await self.measure(lite, stream, c)
                if plan.litellm_concurrency != CONCURRENCY:
                    self.notes.append(
                        "LiteLLM measured at c="
                        + ",".join(map(str, plan.litellm_concurrency))
                        + " only in --quick mode (its boot alone takes ~15 s)"
                    )

    # -- reporting --

    def summary(self, name: str, stream: bool, c: int) -> dict[str, Any] | None:
        runs = self.endpoints[name].runs.get((stream, c))
        return lg.summarize(runs) if runs else None

    def ratio(self, a: str, b: str, stream: bool, c: int) -> float | None:
        sa, sb = self.summary(a, stream, c), self.summary(b, stream, c)
        if sa is None or sb is None or not sb["rps"]:
            return None
        return clean_number(float(sa["rps"]) / float(sb["rps"]), 3)

    def round_ratios(self, a: str, b: str, stream: bool, c: int) -> list[float]:
        """a's rps over b's, round by round: the two ran in the same rotation of each round.

        Their spread is how far the median can be trusted on this machine: on
        a shared host the bare proxy alone has moved by half between rounds.
        """
        ra = self.endpoints[a].runs.get((stream, c), [])
        rb = self.endpoints[b].runs.get((stream, c), [])
        return [round(x.rps / y.rps, 3) for x, y in zip(ra, rb, strict=False) if x.rps and y.rps]

    def spread(self, a: str, b: str, stream: bool, c: int) -> str:
        ratios = self.round_ratios(a, b, stream, c)
        if len(ratios) < 2:
            return ""
        return f"rounds {min(ratios):.3f} to {max(ratios):.3f}"

    def added(self, name: str, key: str, stream: bool, c: int) -> float | None:
        s, d = self.summary(name, stream, c), self.summary("direct", stream, c)
        if s is None or d is None:
            return None
        return clean_number(float(s[key]) - float(d[key]), 4)

    def cpu_ratio(self, a: str, b: str, stream: bool, c: int) -> float | None:
        """b's CPU per request over a's: a's throughput relative to b's on a core of its own."""
        sa, sb = self.summary(a, stream, c), self.summary(b, stream, c)
        if sa is None or sb is None:
            return None
        own = float(sa["cpu_ms_per_req"])
        # A smoke run answers so few requests that the CPU clock can read zero.
        if own <= 0:
            return None
        return clean_number(float(sb["cpu_ms_per_req"]) / own, 3)

    def report(self) -> Report:
        rep = Report("overhead: reefgate vs direct, bare aiohttp proxy, nginx, LiteLLM")
        info = machine_info()
        info["loadavg_1m_at_start"] = self.load_at_start
        load = f"wrk {lg.wrk_version()} (-t1)" if self.wrk else "in-repo aiohttp client"
        busy = max(self.load_at_start, info["loadavg_1m"]) > info["cpus"]
        rep.add(
            "setup",
            "\n".join(
                [
                    f"mode {self.opts.mode}; {describe_machine(info)}",
                    f"proxy under test pinned to core {PROXY_CPU}, fake upstream and load "
                    f"generator to core {LOAD_CPU}",
                    f"request: {len(self.turns.body(0, 'x', False))} B, 10 messages; "
                    "user message 7 and tool result 9 new on every request",
                    f"load: c=1 in-repo closed-loop client; c=10/50 "
                    f"{'in-repo client (smoke)' if self.opts.smoke else load}; "
                    f"{self.plan.rounds} round(s), medians over rounds",
                    "cpu ms/req: CPU time of the server process tree per answered request "
                    "(direct: the fake upstream's), unaffected by other load",
                    f"load average {self.load_at_start:.2f} at start, {info['loadavg_1m']:.2f} "
                    f"at end; benchmark processes at nice {info['nice']}"
                    + (
                        " - OTHER PROCESSES COMPETED FOR THE CPU: wall-clock figures are noisy; "
                        "compare cpu ms/req"
                        if busy
                        else ""
                    ),
                    *(
                        f"{e.label}: NOT RUN - {e.reason}"
                        for e in self.endpoints.values()
                        if not e.ok
                    ),
                    *self.notes,
                ]
            ),
        )
        headers = [
            "target",
            "c",
            "load",
            "requests",
            "errors",
            "rps",
            "x direct",
            "p50 ms",
            "p99 ms",
            "+p50 ms",
            "+p99 ms",
            "ttfb p50",
            "+ttfb ms",
            "cpu ms/req",
        ]
        results: dict[str, Any] = {}
        errors: list[str] = []
        for stream in (False, True):
            rows: list[list[object]] = []
            for name in ORDER:
                ep = self.endpoints[name]
                for c in CONCURRENCY:
                    s = self.summary(name, stream, c)
                    if s is None:
                        continue
                    is_client = s["tool"] == "client"
                    rows.append(
                        [
                            name,
                            c,
                            s["tool"],
                            s["requests"],
                            s["errors"],
                            s["rps"],
                            self.ratio(name, "direct", stream, c),
                            s["p50_ms"],
                            s["p99_ms"],
                            self.added(name, "p50_ms", stream, c),
                            self.added(name, "p99_ms", stream, c),
                            s["ttfb_p50_ms"] if is_client else None,
                            self.added(name, "ttfb_p50_ms", stream, c) if is_client else None,
                            s["cpu_ms_per_req"],
                        ]
                    )
                    results.setdefault(name, {}).setdefault("sse" if stream else "json", {})[
                        str(c)
                    ] = {k: clean_number(v) if isinstance(v, float) else v for k, v in s.items()}
                    samples = [r.error_sample for r in ep.runs[(stream, c)] if r.error_sample]
                    if samples:
                        errors.append(f"{name} c={c} {'sse' if stream else 'json'}: {samples[0]}")
            rep.add(
                f"{'streamed (SSE)' if stream else 'non-streamed (JSON)'} answers "
                "(ms; + = added versus direct; ttfb from the in-repo client only)",
                table(headers, rows, digits=3),
            )
        if errors:
            rep.add("errors", "\n".join(errors))

        ratio_rows: list[list[object]] = []
        for peer in ("bare", "nginx", "litellm"):
            for stream in (False, True):
                for c in CONCURRENCY:
                    r = self.ratio("reefgate", peer, stream, c)
                    if r is not None:
                        ratio_rows.append(
                            [
                                f"reefgate / {peer}",
                                "sse" if stream else "json",
                                c,
                                r,
                                self.cpu_ratio("reefgate", peer, stream, c),
                                self.added(peer, "p50_ms", stream, c),
                                self.added("reefgate", "p50_ms", stream, c),
                            ]
                        )
        rep.add(
            "ratios (reefgate over the peer: measured rps, and rps per CPU = peer cpu/req over "
            "reefgate's; added p50 of each versus direct)",
            table(
                [
                    "pair",
                    "answer",
                    "c",
                    "rps ratio",
                    "rps/CPU ratio",
                    "peer +p50 ms",
                    "reefgate +p50 ms",
                ],
                ratio_rows,
                digits=3,
            ),
        )

        lite = self.endpoints["litellm"]
        reasons: dict[str, str] = {}

        def need(key: str, value: float | None, why: str) -> float | None:
            if value is None:
                reasons[key] = why
            return value

        lite_why = lite.reason or "LiteLLM was not measured at c=10"
        nginx_why = self.endpoints["nginx"].reason or "nginx was not measured"
        reef_cpu = self.summary("reefgate", False, 50)
        data: dict[str, Any] = {
            "benchmark": "overhead",
            "mode": self.opts.mode,
            "added_p50_ms_c1": need(
                "added_p50_ms_c1", self.added("reefgate", "p50_ms", False, 1), "no c=1 run"
            ),
            "added_p99_ms_c1": need(
                "added_p99_ms_c1", self.added("reefgate", "p99_ms", False, 1), "no c=1 run"
            ),
            "ttfb_added_ms_c1": need(
                "ttfb_added_ms_c1",
                self.added("reefgate", "ttfb_p50_ms", True, 1),
                "no streamed c=1 run",
            ),
            "bare_added_p50_ms_c1": self.added("bare", "p50_ms", False, 1),
            "bare_ttfb_added_ms_c1": self.added("bare", "ttfb_p50_ms", True, 1),
            "added_p50_c1_vs_bare": need(
                "added_p50_c1_vs_bare",
                _over(
                    self.added("reefgate", "p50_ms", False, 1),
                    self.added("bare", "p50_ms", False, 1),
                ),
                "no c=1 run, or the bare proxy added no measurable latency",
            ),
            "rps_vs_bare_c50": need(
                "rps_vs_bare_c50", self.ratio("reefgate", "bare", False, 50), "no c=50 run"
            ),
            "rps_vs_bare_c50_stream": need(
                "rps_vs_bare_c50_stream",
                self.ratio("reefgate", "bare", True, 50),
                "no streamed c=50 run",
            ),
            "cpu_rps_vs_bare_c50": need(
                "cpu_rps_vs_bare_c50",
                self.cpu_ratio("reefgate", "bare", False, 50),
                "no c=50 run",
            ),
            "rps_vs_bare_c50_rounds": self.round_ratios("reefgate", "bare", False, 50),
            "rps_vs_bare_c50_stream_rounds": self.round_ratios("reefgate", "bare", True, 50),
            "reefgate_cpu_ms_per_req_c50": clean_number(
                float(reef_cpu["cpu_ms_per_req"]) if reef_cpu else None
            ),
            "rps_vs_nginx_c50": need(
                "rps_vs_nginx_c50", self.ratio("reefgate", "nginx", False, 50), nginx_why
            ),
            "rps_vs_litellm_c10": need(
                "rps_vs_litellm_c10", self.ratio("reefgate", "litellm", False, 10), lite_why
            ),
            "rps_vs_litellm_c10_stream": need(
                "rps_vs_litellm_c10_stream", self.ratio("reefgate", "litellm", True, 10), lite_why
            ),
            "cpu_rps_vs_litellm_c10": need(
                "cpu_rps_vs_litellm_c10",
                self.cpu_ratio("reefgate", "litellm", False, 10),
                lite_why,
            ),
            "peers": {
                name: {"ran": ep.ok and bool(ep.runs), "reason": ep.reason or None}
                for name, ep in self.endpoints.items()
            },
            "load_generator": {"c1": "in-repo client", "c10_c50": load},
            "machine": info,
            "results": results,
        }
        targets = [
            Target(
                "added p50, c=1, non-streamed", data["added_p50_ms_c1"], "<=", 0.5, "ms", "per hop"
            ),
            Target("added TTFB, c=1, streamed", data["ttfb_added_ms_c1"], "<=", 0.5, "ms"),
            Target(
                "added p50, c=1: reefgate / bare proxy",
                data["added_p50_c1_vs_bare"],
                "<=",
                1.8,
                note="latency each adds over calling the upstream directly",
            ),
            Target(
                "rps / bare proxy, c=50, non-streamed",
                data["rps_vs_bare_c50"],
                ">=",
                0.55,
                note=self.spread("reefgate", "bare", False, 50),
            ),
            Target(
                "rps / bare proxy, c=50, streamed",
                data["rps_vs_bare_c50_stream"],
                ">=",
                0.55,
                note=self.spread("reefgate", "bare", True, 50),
            ),
            Target(
                "rps per CPU / bare proxy, c=50, non-streamed",
                data["cpu_rps_vs_bare_c50"],
                ">=",
                0.55,
                note="same goal, by CPU time",
            ),
            Target(
                "rps / LiteLLM, c=10, non-streamed",
                data["rps_vs_litellm_c10"],
                ">=",
                20,
                note=reasons.get("rps_vs_litellm_c10", ""),
            ),
            Target(
                "rps / LiteLLM, c=10, streamed",
                data["rps_vs_litellm_c10_stream"],
                ">=",
                20,
                note=reasons.get("rps_vs_litellm_c10_stream", ""),
            ),
        ]
        data["targets"] = targets_json(targets)
        data["null_reasons"] = reasons
        rep.add("targets", targets_table(targets))
        rep.data = data
        return rep


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="run reefgate with serve --workers N (N > 1: on every core, not pinned to one)",
    )


def main(argv: Sequence[str]) -> int:
    return run_service_bench("overhead", argv, Bench, _options)


def _over(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return round(a / b, 3)
