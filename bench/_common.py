"""What every benchmark shares: options, child processes, configs, statistics, output."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import functools
import hashlib
import json
import math
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml
from aiohttp import web

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
VAR = ROOT / "var" / "bench"

# The proxy under test gets core 0 to itself; the load generator and the fake
# upstream share core 1, so neither steals cycles from what is measured.
PROXY_CPU = 0
LOAD_CPU = 1


@dataclass(frozen=True)
class Options:
    quick: bool
    smoke: bool
    json: bool
    install: bool
    extra: argparse.Namespace

    @property
    def mode(self) -> str:
        return "smoke" if self.smoke else "quick" if self.quick else "full"


def parse_options(
    prog: str, argv: Sequence[str], add: Callable[[argparse.ArgumentParser], None] | None = None
) -> Options:
    parser = argparse.ArgumentParser(prog=f"python -m bench {prog}")
    parser.add_argument("--quick", action="store_true", help="under a minute")
    parser.add_argument(
        "--smoke", action="store_true", help="seconds; checks the plumbing, not the numbers"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object as the last line")
    parser.add_argument(
        "--no-install",
        action="store_true",
        help="never run apt-get or pip; missing peers report null "
        "(also when REEFGATE_BENCH_NO_INSTALL=1)",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=-10,
        help="scheduling priority of the benchmark and everything it starts (default -10, "
        "which needs root; 0 leaves it alone; not applied with --smoke)",
    )
    if add is not None:
        add(parser)
    ns = parser.parse_args(list(argv))
    install = not ns.no_install and os.environ.get("REEFGATE_BENCH_NO_INSTALL") != "1"
    opts = Options(ns.quick, ns.smoke, ns.json, install, ns)
    if ns.nice and not ns.smoke:
        prioritize(ns.nice)
    return opts


NICE: dict[str, int | str] = {"requested": 0, "applied": 0}


def prioritize(nice: int) -> None:
    """Raise the benchmark's priority; children inherit it through fork.

    On a machine that other jobs share, this keeps their CPU from landing in
    the middle of a latency measurement.
    """
    NICE["requested"] = nice
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        NICE["applied"] = os.getpriority(os.PRIO_PROCESS, 0)
    except OSError as exc:
        NICE["applied"] = f"not applied ({exc.strerror})"


async def serve_app(app: web.Application, name: str, port: int, max_s: float) -> None:
    """Serve `app` on loopback until SIGINT, SIGTERM or `max_s` seconds.

    Prints `<name> listening on http://127.0.0.1:PORT` once bound. Bounded so
    that an orphaned service never outlives its benchmark by much.
    """
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096, reuse_address=True)
    await site.start()
    print(f"{name} listening on http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), timeout=max_s)
    except TimeoutError:
        pass
    finally:
        await runner.cleanup()


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop when installed, as `reefgate serve` does, so baselines are like for like."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


_STARTED = time.monotonic()


def progress(message: str) -> None:
    """A line on stderr, so a long run shows where it is without touching the report."""
    print(f"[bench {time.monotonic() - _STARTED:6.1f}s] {message}", file=sys.stderr, flush=True)


# Taken before anything is pinned; children inherit it through fork.
_CPUS = sorted(os.sched_getaffinity(0))


def cpus() -> list[int]:
    return list(_CPUS)


def pin_self(cpu: int) -> None:
    """Pin the calling process; a no-op on a single-core machine."""
    available = cpus()
    if len(available) > 1:
        os.sched_setaffinity(0, {available[cpu % len(available)]})


def unpin_self() -> None:
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, set(_CPUS))


def raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _die_with_parent() -> None:
    """Ask the kernel to SIGTERM the child when the benchmark dies, even by SIGKILL."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


# `cpu=ALL_CPUS`: a service that may run on every core (reefgate with --workers).
ALL_CPUS = -1


def child_setup(cpu: int | None) -> Callable[[], None]:
    def setup() -> None:
        _die_with_parent()
        raise_nofile()
        if cpu == ALL_CPUS:
            unpin_self()
        elif cpu is not None:
            pin_self(cpu)

    return setup


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C, so every `finally` kills what it started."""

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class StartError(RuntimeError):
    pass


@dataclass
class Service:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    port: int = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Services:
    """Child processes, each in its own process group, all killed on exit."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._all: list[Service] = []

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def spawn(
        self,
        name: str,
        argv: Sequence[str],
        *,
        cpu: int | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Service:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env={**os.environ, **(env or {})},
                start_new_session=True,
                # preexec_fn is unsafe with threads; the benchmark starts none.
                preexec_fn=child_setup(cpu),
            )
        service = Service(name, proc, log)
        self._all.append(service)
        return service

    def wait_line(self, service: Service, pattern: str, timeout: float) -> re.Match[str]:
        """Wait for a line of the service's output; its first group is the port when present."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = service.log.read_text(errors="replace") if service.log.exists() else ""
            m = rx.search(text)
            if m is not None:
                if m.groups():
                    service.port = int(m.group(1))
                return m
            if service.proc.poll() is not None:
                raise StartError(
                    f"{service.name} exited with {service.proc.returncode}:\n{service.tail()}"
                )
            if time.monotonic() > deadline:
                raise StartError(
                    f"{service.name} not ready after {timeout:.0f}s:\n{service.tail()}"
                )
            time.sleep(0.02)

    def wait_http(self, service: Service, path: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        url = service.url + path
        while True:
            if service.proc.poll() is not None:
                raise StartError(
                    f"{service.name} exited with {service.proc.returncode}:\n{service.tail()}"
                )
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(url, timeout=2) as resp,  # loopback only
            ):
                if resp.status < 500:
                    return
            if time.monotonic() > deadline:
                raise StartError(
                    f"{service.name} not ready after {timeout:.0f}s:\n{service.tail()}"
                )
            time.sleep(0.2)

    def stop(self, service: Service) -> None:
        if service.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(service.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                service.proc.wait(timeout=5)
        # Whatever the leader left behind in its group goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(service.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            service.proc.wait(timeout=5)
        if service in self._all:
            self._all.remove(service)

    def running(self) -> list[Service]:
        return list(self._all)

    def close(self) -> None:
        for service in reversed(list(self._all)):
            self.stop(service)


@contextlib.contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=f"reefgate-bench-{prefix}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def reefgate_argv(config_dir: Path, workers: int = 1) -> list[str]:
    script = Path(sys.executable).parent / "reefgate"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "gateway"]
    argv = [*head, "serve", "--config", str(config_dir), "--port", "0"]
    return [*argv, "--workers", str(workers)] if workers > 1 else argv


REEFGATE_READY = r"reefgate \S+ listening on http://127\.0\.0\.1:(\d+)"
SERVICE_READY = r"listening on http://127\.0\.0\.1:(\d+)"


def gateway_config(
    dest: Path, upstream_url: str, *, classifier: dict[str, Any] | None = None
) -> Path:
    """A copy of the shipped config/ with only the upstream, audit path (and classifier) changed."""
    shipped = ROOT / "config"
    shutil.copytree(shipped, dest)
    data = yaml.safe_load((shipped / "gateway.yaml").read_text()) or {}
    data.setdefault("upstreams", {}).setdefault("openai", {})["base_url"] = upstream_url
    data.setdefault("audit", {})["path"] = str(dest / "audit.jsonl")
    if classifier is not None:
        data.setdefault("guard", {})["classifier"] = classifier
    (dest / "gateway.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return dest


def rss_kb(pid: int, field_name: str = "VmRSS") -> int:
    """Resident memory of one process from /proc/PID/status, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field_name} for pid {pid}")


def tree_rss_kb(pid: int) -> int:
    """RSS of a process and all its descendants (nginx workers, LiteLLM's children)."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError, RuntimeError):
            total += rss_kb(p)
        todo.extend(_children(p))
    return total


_TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            out.extend(int(c) for c in (task / "children").read_text().split())
    return out


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its live descendants.

    Robust to other load on the machine, unlike wall-clock throughput: it is
    what each request costs the proxy, whoever else wants the core.
    """
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = Path(f"/proc/{p}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])
        todo.extend(_children(p))
    return total / _TICK


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return math.nan


# -- statistics --


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile of unsorted values (q in 0..100)."""
    if not values:
        return math.nan
    data = sorted(values)
    pos = (len(data) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


# -- output --


def fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], digits: int = 2) -> str:
    cells = [[fmt(c, digits) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]

    def line(values: Sequence[str]) -> str:
        out = []
        for i, v in enumerate(values):
            out.append(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i]))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep, *(line(r) for r in cells)])


@dataclass
class Target:
    name: str
    value: float | None
    op: str  # "<=", ">=" or "=="
    threshold: float
    unit: str = ""
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.value is None or math.isnan(self.value):
            return "n/a"
        if self.op == "==":
            ok = math.isclose(self.value, self.threshold, abs_tol=1e-9)
        elif self.op == "<=":
            ok = self.value <= self.threshold
        else:
            ok = self.value >= self.threshold
        return "PASS" if ok else "MISS"


def targets_table(targets: Sequence[Target]) -> str:
    rows = [
        [
            t.name,
            t.value,
            f"{t.op} {fmt(t.threshold)}{(' ' + t.unit) if t.unit else ''}",
            t.verdict,
            t.note,
        ]
        for t in targets
    ]
    return table(["target", "measured", "goal", "PASS/MISS", "note"], rows, digits=3)


def targets_json(targets: Sequence[Target]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "value": t.value, "goal": f"{t.op} {t.threshold}", "verdict": t.verdict}
        for t in targets
    ]


def clean_number(value: float | None, digits: int = 4) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits)


@dataclass
class Report:
    """What a benchmark prints: sections of text, then the JSON line last."""

    title: str
    sections: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def add(self, heading: str, body: str) -> None:
        self.sections.append(f"{heading}\n{body}")

    def emit(self, as_json: bool) -> None:
        print(f"== {self.title} ==", flush=True)
        machine = self.data.get("machine")
        if isinstance(machine, dict):
            print(
                f"(gateway source sha256 {machine['gateway_source_sha256']}, "
                f"python {machine['python']}, load average {machine['loadavg_1m']})",
                flush=True,
            )
        for section in self.sections:
            print()
            print(section)
        if as_json:
            print(flush=True)
            print(json.dumps(self.data, sort_keys=False, allow_nan=False), flush=True)


def gateway_digest() -> str:
    """A digest of the gateway's source, so a figure can be tied to the code it measured."""
    h = hashlib.sha256()
    for path in sorted((ROOT / "gateway").rglob("*")):
        if path.suffix in (".py", ".json") and path.is_file():
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _calibration_loop(n: int) -> int:
    table = {str(i): i for i in range(256)}
    keys = list(table)
    total = 0
    for i in range(n):
        total += table[keys[i & 255]]
    return total


@functools.cache
def python_loop_ns() -> float:
    """ns per iteration of a fixed pure-Python loop, best of seven.

    Absolute figures (MB/s, ms) scale with how fast the machine runs Python,
    and shared machines of one kind differ by more than 2x; this ties each
    run's absolute figures to the speed of the machine it ran on.
    """
    n = 200_000
    best = math.inf
    for _ in range(7):
        started = time.perf_counter()
        _calibration_loop(n)
        best = min(best, time.perf_counter() - started)
    return round(best * 1e9 / n, 1)


def describe_machine(info: dict[str, Any]) -> str:
    return (
        f"{info['cpus']} cores ({info['cpu_model']}); "
        f"a fixed Python loop runs at {info['python_loop_ns']} ns per iteration"
    )


def machine_info() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": len(cpus()),
        "cpu_model": model,
        "python": sys.version.split()[0],
        "loadavg_1m": loadavg(),
        "nice": NICE["applied"],
        "gateway_source_sha256": gateway_digest(),
        "python_loop_ns": python_loop_ns(),
    }


class ServiceBench(Protocol):
    """A benchmark that starts its own services, measures, then reports."""

    def start(self) -> None: ...

    async def run(self) -> None: ...

    def report(self) -> Report: ...


def run_service_bench(
    name: str,
    argv: Sequence[str],
    make: Callable[[Options, Services, Path], ServiceBench],
    add: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """`main` of a benchmark with services: pinned to the load core, logs shown on failure."""
    opts = parse_options(name, argv, add)
    install_signal_handlers()
    raise_nofile()
    pin_self(LOAD_CPU)

    async def measure() -> Report:
        with workdir(name) as tmp, Services(tmp) as services:
            bench = make(opts, services, tmp)
            try:
                bench.start()
                await bench.run()
            except Exception:
                for svc in services.running():
                    print(f"--- {svc.name} log tail ---\n{svc.tail()}", flush=True)
                raise
            return bench.report()

    run_async(measure()).emit(opts.json)
    return 0
