"""Instructions per request under callgrind: the gateway's CPU cost, counted rather than timed.

Wall-clock ratios on a shared machine move by 15% or more from one run to the
next, which hides any single change to the request path. Callgrind counts the
instructions a server executes, the same on every run to within a fraction
of a percent. On this CPU-bound request the count once tracked the
throughput ratio `overhead` measures at c=50; it no longer does alone,
because reefgate also retires fewer instructions per cycle than the bare
proxy (the cache misses below are the measure of that).

The overhead request (the ~4.5 KB agent turn, new user text and tool result
every time) goes at c=1 through the bare aiohttp proxy and through the
builds of `reefgate serve` that `breakdown` uses (bench/ablated.py), each
under `valgrind --tool=callgrind`. A server starts with instrumentation off
(imports and rule compilation would take minutes under it), is switched on,
answers warm-up requests, has its counters zeroed, answers the measured
requests and is dumped; instructions per request is the dump's total over
the requests answered. Stages are differences between neighbouring builds.
With `--concurrency 50` the in-repo client keeps 50 requests in flight
(and counts ten times as many), so the counts are those of `overhead`'s
throughput load, where each request's steps run between other requests'.

Callgrind also runs a model of one core's caches (32 KB L1 for instructions
and for data, a 512 KB last level standing for a core's L2, without the L3
cores share) and counts the misses, as exact from run to run as the
instructions. The model is fixed, so the counts compare across machines and
builds. They are the part of a request's cost that instruction counts leave
out: code, tables and data that do not stay in cache between one request's
steps. `--last-level-kb` sets another last level (a machine whose cores have
a 2 MB L2: `--last-level-kb 2048`); counts made with different models do
not compare.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import _loadgen as lg
from bench import _peers as peers
from bench._common import (
    LOAD_CPU,
    PROXY_CPU,
    REEFGATE_READY,
    ROOT,
    SERVICE_READY,
    Options,
    Report,
    Services,
    Target,
    clean_number,
    describe_machine,
    gateway_config,
    machine_info,
    progress,
    python_module,
    run_service_bench,
    table,
    targets_json,
    targets_table,
)
from bench._corpus import AgentTurns
from bench.breakdown import STAGES, VARIANTS

CHAT = "/v1/chat/completions"
_EVENTS = re.compile(r"^events: (.+)$", re.M)
_SUMMARY = re.compile(r"^summary: ([\d ]+)$", re.M)
# The cache model: one core's L1s and its L2 as the last level (size, ways, line).
_L1 = ("--I1=32768,8,64", "--D1=32768,8,64")
_LAST_LEVEL_KB = 512
_LINE = 64


def _last_level(kb: int) -> str:
    """Callgrind's option for a last level of ``kb`` KB: 8 ways below 1 MB, 16 from 1 MB."""
    ways = 8 if kb < 1024 else 16
    sets = kb * 1024 // (ways * _LINE)
    if kb <= 0 or sets & (sets - 1) or sets * ways * _LINE != kb * 1024:
        raise ValueError(f"--last-level-kb {kb}: callgrind needs a power-of-two number of sets")
    return f"--LL={kb * 1024},{ways},{_LINE}"


def last_level_kb(text: str) -> int:
    """``--last-level-kb``: a size callgrind can model (argparse reports a ValueError)."""
    kb = int(text)
    _last_level(kb)
    return kb


_L1_MISSES = ("I1mr", "D1mr", "D1mw")
_LL_MISSES = ("ILmr", "DLmr", "DLmw")
# What `overhead` and `breakdown` aim for, as a ratio of instructions.
_TARGET_RATIO = 0.55
# Wider stages, for the modes that run fewer builds.
_COARSE = (
    ("the whole guard", "reefgate", "no_guard"),
    ("parse and audit", "no_guard", "core"),
)


@dataclass(frozen=True)
class Plan:
    warm: int
    requests: int
    servers: tuple[str, ...]
    # The same turn asking for a streamed answer, through these servers.
    streamed: tuple[str, ...] = ()

    @staticmethod
    def for_mode(opts: Options) -> Plan:
        everything = ("bare", *(v[0] for v in VARIANTS))
        both = ("bare", "reefgate")
        if opts.smoke:
            return Plan(3, 3, both)
        if opts.quick:
            return Plan(30, 60, ("bare", "reefgate", "no_guard", "core"), both)
        return Plan(60, 200, everything, both)


class Bench:
    def __init__(self, opts: Options, services: Services, tmp: Path) -> None:
        self.opts = opts
        self.plan = Plan.for_mode(opts)
        self.services = services
        self.tmp = tmp
        self.turns = AgentTurns()
        self.upstream = ""
        self.valgrind = peers.Prepared(False, "not looked for")
        self.control = ""
        self.instructions: dict[str, float] = {}
        # Modeled cache misses per request: first level (code and data), last level.
        self.l1_misses: dict[str, float] = {}
        self.ll_misses: dict[str, float] = {}
        self.answered: dict[str, int] = {}
        # Requests in flight while counting: at c=50 one request's steps run
        # between other requests', as in `overhead`'s throughput runs.
        self.concurrency: int = getattr(opts.extra, "concurrency", 1)
        self.last_level_kb: int = getattr(opts.extra, "last_level_kb", _LAST_LEVEL_KB)
        self.caches = (*_L1, _last_level(self.last_level_kb))

    def start(self) -> None:
        self.valgrind = peers.apt_install("valgrind", "valgrind", self.opts.install)
        if self.valgrind.ok:
            self.control = str(Path(self.valgrind.path).with_name("callgrind_control"))
        upstream = self.services.spawn(
            "fake-upstream", python_module("bench.fake_upstream"), cpu=LOAD_CPU
        )
        self.services.wait_line(upstream, SERVICE_READY, 30)
        self.upstream = upstream.url

    def _argv(self, name: str, out: Path) -> tuple[list[str], str, str]:
        """The server's command line under callgrind, its ready line and URL prefix."""
        head = [
            self.valgrind.path,
            "--tool=callgrind",
            "--instr-atstart=no",
            "--cache-sim=yes",
            *self.caches,
            f"--callgrind-out-file={out}",
        ]
        if name == "bare":
            argv = python_module("bench.bare_proxy", "--upstream", self.upstream)
            return [*head, *argv], SERVICE_READY, "/openai"
        without = next(v[1] for v in VARIANTS if v[0] == name)
        config = gateway_config(self.tmp / f"config-{out.stem}", self.upstream)
        argv = python_module(
            "bench.ablated", "--without", without, "serve", "--config", str(config), "--port", "0"
        )
        return [*head, *argv], REEFGATE_READY, "/openai"

    def _control(self, pid: int, *args: str) -> None:
        subprocess.run(
            [self.control, *args, str(pid)], capture_output=True, check=True, timeout=120
        )

    async def _load(self, url: str, tag: str, n: int, stream: bool) -> int:
        result = await lg.client_run(
            url,
            lambda i: self.turns.body(i, tag, stream),
            stream=stream,
            concurrency=self.concurrency,
            duration_s=600,
            max_requests=n,
        )
        if result.errors or result.requests < n:
            raise RuntimeError(f"{tag}: {result.error_sample or 'too few answers'}")
        return result.requests

    async def measure(self, name: str, stream: bool = False) -> None:
        key = f"{name}_stream" if stream else name
        out = self.tmp / f"{key}.callgrind"
        argv, ready, prefix = self._argv(name, out)
        service = self.services.spawn(
            key, argv, cpu=PROXY_CPU, cwd=self.tmp, env={"PYTHONPATH": str(ROOT)}
        )
        try:
            self.services.wait_line(service, ready, 300)
            url = service.url + prefix + CHAT
            self._control(service.pid, "--instr=on")
            # Every counted request is answered before the dump, and none
            # is in flight when the counters are zeroed.
            scale = max(1, self.concurrency // 10)
            await self._load(url, f"{key}-warm", self.plan.warm * scale, stream)
            self._control(service.pid, "--zero")
            answered = await self._load(url, f"{key}-run", self.plan.requests * scale, stream)
            self._control(service.pid, "--dump=measured")
        finally:
            self.services.stop(service)
        totals: dict[str, int] = {}
        for dump in out.parent.glob(out.name + ".*"):
            text = dump.read_text(errors="replace")
            if "Trigger: dump measured" in text:
                for event, value in _summary(text).items():
                    totals[event] = totals.get(event, 0) + value
        if not totals.get("Ir"):
            raise RuntimeError(f"{key}: callgrind wrote no measured dump")
        self.instructions[key] = totals["Ir"] / answered
        self.l1_misses[key] = sum(totals.get(e, 0) for e in _L1_MISSES) / answered
        self.ll_misses[key] = sum(totals.get(e, 0) for e in _LL_MISSES) / answered
        self.answered[key] = answered

    async def run(self) -> None:
        if not self.valgrind.ok:
            return
        runs = [(n, False) for n in self.plan.servers] + [(n, True) for n in self.plan.streamed]
        for name, stream in runs:
            progress(f"{name}{' streamed' if stream else ''} under callgrind")
            await self.measure(name, stream)
            self._clear_dumps()
            await asyncio.sleep(0)

    def _clear_dumps(self) -> None:
        """The dumps can be large; only the totals are kept, unless asked."""
        keep: Path | None = getattr(self.opts.extra, "keep_dumps", None)
        for dump in self.tmp.glob("*.callgrind*"):
            if keep is not None and "Trigger: dump measured" in dump.read_text(errors="replace"):
                keep.mkdir(parents=True, exist_ok=True)
                shutil.move(dump, keep / dump.name)
            else:
                dump.unlink()

    def report(self) -> Report:
        rep = Report("instructions: reefgate's CPU per request, counted by callgrind")
        info = machine_info()
        count = self.instructions
        rep.add(
            "setup",
            "\n".join(
                [
                    f"mode {self.opts.mode}; {describe_machine(info)}",
                    f"request: {len(self.turns.body(0, 'x', False))} B, non-streamed, "
                    f"c={self.concurrency} (the in-repo client); "
                    f"{self.answered.get('bare', 0) or self.plan.requests} counted per server "
                    "after a warm-up",
                    f"valgrind: {self.valgrind.path or self.valgrind.reason}; "
                    f"cache model: {' '.join(self.caches)}",
                ]
            ),
        )
        bare = count.get("bare")
        labels = {"bare": "bare aiohttp proxy", **{v[0]: v[2] for v in VARIANTS}}

        def server_row(label: str, key: str, base: str) -> list[object]:
            value, base_value = count.get(key), count.get(base)
            l1, ll = self.l1_misses.get(key), self.ll_misses.get(key)
            base_ll = self.ll_misses.get(base)
            return [
                label,
                value / 1e6 if value else None,
                base_value / value if base_value and value else None,
                l1 / 1e3 if l1 else None,
                ll / 1e3 if ll else None,
                base_ll / ll if base_ll and ll else None,
            ]

        rows = [server_row(labels[name], name, "bare") for name in self.plan.servers]
        rows += [
            server_row(labels[name] + ", streamed", f"{name}_stream", "bare_stream")
            for name in self.plan.streamed
        ]
        stream_bare = count.get("bare_stream")
        rep.add(
            "servers (misses: the cache model's, see the module's docstring)",
            table(
                [
                    "server",
                    "M instructions/request",
                    "bare / server",
                    "k L1 misses/request",
                    "k last-level misses/request",
                    "bare / server, last-level misses",
                ],
                rows,
                digits=3,
            ),
        )
        stage_data: dict[str, float | None] = {}
        stage_misses: dict[str, float | None] = {}
        stage_rows: list[list[object]] = []
        fine = all(v[0] in count for v in VARIANTS)
        for stage, a, b in STAGES if fine else (*_COARSE, STAGES[-1]):
            if a in count and b in count:
                cost = count[a] - count[b]
                stage_data[stage] = clean_number(cost / 1e3, 1)
                misses = self.ll_misses.get(a, 0.0) - self.ll_misses.get(b, 0.0)
                stage_misses[stage] = clean_number(misses / 1e3, 2)
                stage_rows.append([stage, cost / 1e3, misses / 1e3])
        if stage_rows:
            rep.add(
                "stages (difference between neighbouring builds)",
                table(
                    ["stage", "k instructions/request", "k last-level misses/request"],
                    stage_rows,
                    digits=2,
                ),
            )

        def ratio(name: str) -> float | None:
            value = count.get(name)
            return clean_number(bare / value, 3) if bare and value else None

        full, no_guard = ratio("reefgate"), ratio("no_guard")
        streamed_value = count.get("reefgate_stream")
        streamed = (
            clean_number(stream_bare / streamed_value, 3)
            if stream_bare and streamed_value
            else None
        )
        targets = [
            Target("instructions: bare proxy / reefgate", full, ">=", _TARGET_RATIO),
            Target("instructions: the same, streamed", streamed, ">=", _TARGET_RATIO),
            Target(
                "instructions: bare proxy / reefgate without the guard",
                no_guard,
                ">=",
                0.8,
                note="what a zero-cost guard would reach",
            ),
        ]
        rep.add("targets", targets_table(targets))
        why = self.valgrind.reason if not self.valgrind.ok else "this mode does not run that build"
        rep.data = {
            "benchmark": "instructions",
            "mode": self.opts.mode,
            "concurrency": self.concurrency,
            "last_level_kb": self.last_level_kb,
            "instructions_per_request": {k: round(v) for k, v in count.items()},
            "l1_misses_per_request": {k: round(v) for k, v in self.l1_misses.items()},
            "last_level_misses_per_request": {k: round(v) for k, v in self.ll_misses.items()},
            "requests_counted": self.answered,
            "ratio_vs_bare": full,
            "ratio_vs_bare_without_guard": no_guard,
            "ratio_vs_bare_stream": streamed,
            "stage_k_instructions": stage_data,
            "stage_k_last_level_misses": stage_misses,
            "targets": targets_json(targets),
            "null_reasons": {
                key: why
                for key, value in (
                    ("ratio_vs_bare", full),
                    ("ratio_vs_bare_without_guard", no_guard),
                    ("ratio_vs_bare_stream", streamed),
                )
                if value is None
            },
            "machine": info,
        }
        return rep


def _summary(dump: str) -> dict[str, int]:
    """Each event's total in one callgrind dump, by the names of its `events:` line."""
    events = _EVENTS.search(dump)
    summary = _SUMMARY.search(dump)
    if events is None or summary is None:
        return {}
    return dict(zip(events.group(1).split(), map(int, summary.group(1).split()), strict=False))


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="requests in flight while counting (default 1; 50 is overhead's throughput load)",
    )
    parser.add_argument(
        "--keep-dumps",
        type=Path,
        metavar="DIR",
        help="move each server's measured callgrind dump into DIR, to read with "
        "callgrind_annotate (the counted requests are in the bench's output)",
    )
    parser.add_argument(
        "--last-level-kb",
        type=last_level_kb,
        default=_LAST_LEVEL_KB,
        help=f"size of the modelled last-level cache in KB (default {_LAST_LEVEL_KB}; "
        "counts made with different sizes do not compare)",
    )


def main(argv: Sequence[str]) -> int:
    return run_service_bench("instructions", argv, Bench, _options)
