"""Load generators: wrk with a Lua script for throughput, an in-repo closed-loop client.

The in-repo client measures every request itself (total latency and time to
the first body byte), which wrk cannot do for TTFB; it is what runs at
concurrency 1 and wherever wrk is not installed. wrk is a C program, so at
c=10 and c=50 the load generator is not the bottleneck the way a Python
client sharing a core with the fake upstream would be.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench._common import LOAD_CPU, child_setup, median, percentile
from bench._corpus import AgentTurns

AUTH = "Bearer sk-bench-master-0123456789abcdef"
HEADERS = {"Content-Type": "application/json", "Authorization": AUTH}


@dataclass
class RunResult:
    tool: str
    requests: int = 0
    errors: int = 0
    elapsed_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    ttfb_ms: list[float] = field(default_factory=list)
    error_sample: str = ""
    # wrk reports percentiles, not samples.
    wrk_p50_ms: float | None = None
    wrk_p99_ms: float | None = None
    # Answers that were not 2xx (wrk only; the client counts them in errors).
    status_errors: int = 0
    # CPU the measured server spent per answered request (set by the caller).
    cpu_ms_per_req: float = math.nan

    @property
    def rps(self) -> float:
        return self.requests / self.elapsed_s if self.elapsed_s > 0 else math.nan

    @property
    def p50(self) -> float:
        return self.wrk_p50_ms if self.wrk_p50_ms is not None else percentile(self.latencies_ms, 50)

    @property
    def p99(self) -> float:
        return self.wrk_p99_ms if self.wrk_p99_ms is not None else percentile(self.latencies_ms, 99)

    @property
    def ttfb_p50(self) -> float:
        return percentile(self.ttfb_ms, 50)


def summarize(runs: list[RunResult]) -> dict[str, float | int | str]:
    """Medians over rounds, so one noisy round does not move the figure."""
    return {
        "tool": runs[0].tool,
        "rounds": len(runs),
        "requests": sum(r.requests for r in runs),
        "errors": sum(r.errors for r in runs),
        "rps": median([r.rps for r in runs]),
        "p50_ms": median([r.p50 for r in runs]),
        "p99_ms": median([r.p99 for r in runs]),
        "ttfb_p50_ms": median([r.ttfb_p50 for r in runs]),
        "cpu_ms_per_req": median([r.cpu_ms_per_req for r in runs]),
    }


# -- in-repo closed-loop client --


async def _one(
    session: aiohttp.ClientSession, url: str, body: bytes, stream: bool, result: RunResult
) -> None:
    t0 = time.perf_counter()
    try:
        async with session.post(url, data=body, headers=HEADERS) as resp:
            first = await resp.content.readany()
            t1 = time.perf_counter()
            tail = first[-64:]
            while True:
                chunk = await resp.content.readany()
                if not chunk:
                    break
                tail = (tail + chunk)[-64:]
            t2 = time.perf_counter()
            ok = resp.status == 200 and (b"[DONE]" in tail if stream else b"}" in tail)
            if not ok:
                result.errors += 1
                if not result.error_sample:
                    text = first[:200].decode(errors="replace")
                    result.error_sample = f"HTTP {resp.status}: {text}"
                return
    except (aiohttp.ClientError, TimeoutError) as exc:
        result.errors += 1
        if not result.error_sample:
            result.error_sample = f"{type(exc).__name__}: {exc}"
        return
    result.requests += 1
    result.latencies_ms.append((t2 - t0) * 1000)
    result.ttfb_ms.append((t1 - t0) * 1000)


async def client_run(
    url: str,
    make_body: Callable[[int], bytes],
    *,
    stream: bool,
    concurrency: int,
    duration_s: float,
    max_requests: int,
) -> RunResult:
    """Closed loop: `concurrency` workers, each sends its next request when the last ends."""
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    timeout = aiohttp.ClientTimeout(total=60)
    counter = 0

    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False
    ) as session:

        async def phase(seconds: float, cap: int) -> RunResult:
            nonlocal counter
            result = RunResult("client")
            deadline = time.perf_counter() + seconds
            started = time.perf_counter()
            issued = 0

            async def worker() -> None:
                nonlocal counter, issued
                while time.perf_counter() < deadline and issued < cap:
                    issued += 1
                    counter += 1
                    await _one(session, url, make_body(counter), stream, result)

            await asyncio.gather(*(worker() for _ in range(concurrency)))
            result.elapsed_s = time.perf_counter() - started
            return result

        return await phase(duration_s, max_requests)


# -- wrk --


def wrk_path() -> str | None:
    return shutil.which("wrk")


def wrk_version() -> str:
    path = wrk_path()
    if path is None:
        return ""
    out = subprocess.run([path, "-v"], capture_output=True, text=True, timeout=10, check=False)
    m = re.search(r"wrk (\S+)", out.stdout + out.stderr)
    return m.group(1) if m else "?"


def _long_string(text: str) -> str:
    level = 1
    while f"]{'=' * level}]" in text:
        level += 1
    eq = "=" * level
    return f"[{eq}[{text}]{eq}]"


def write_lua(path: Path, turns: AgentTurns, stream: bool) -> Path:
    """A wrk script that sends the same bodies as `AgentTurns.body`: new text every request."""
    prefix, middle, suffix = turns.template(stream)

    def escaped(text: str) -> str:
        return json.dumps(text)[1:-1]

    users = ",\n".join(_long_string(escaped(u)) for u in turns.users)
    tools = ",\n".join(_long_string(escaped(t)) for t in turns.tools)
    headers = ", ".join(f'["{k}"] = "{v}"' for k, v in HEADERS.items())
    script = f"""-- generated by bench/_loadgen.py
local prefix = {_long_string(prefix)}
local middle = {_long_string(middle)}
local suffix = {_long_string(suffix)}
local users = {{
{users}
}}
local tools = {{
{tools}
}}
local headers = {{ {headers} }}
local tag = "wrk"
local n = 0

function init(args)
  if args[1] then tag = args[1] end
end

function request()
  n = n + 1
  local i = n % #users + 1
  local ref = tag .. "-" .. n
  local body = prefix .. users[i] .. " (ref " .. ref .. ")" .. middle .. tools[i]
    .. "\\\\n# request " .. ref .. "\\\\n" .. suffix
  return wrk.format("POST", nil, headers, body)
end

function done(summary, latency, requests)
  io.write(string.format(
    "WRKJSON {{\\"requests\\": %d, \\"duration_us\\": %d, \\"connect\\": %d, "
    .. "\\"read\\": %d, \\"write\\": %d, \\"status\\": %d, \\"timeout\\": %d, "
    .. "\\"p50_us\\": %d, \\"p99_us\\": %d}}\\n",
    summary.requests, summary.duration, summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""
    path.write_text(script)
    return path


def wrk_run(
    url: str, script: Path, *, concurrency: int, duration_s: int, tag: str, timeout_s: int = 30
) -> RunResult:
    path = wrk_path()
    assert path is not None
    argv = [
        path,
        "-t1",
        f"-c{concurrency}",
        f"-d{max(1, duration_s)}s",
        f"--timeout={timeout_s}s",
        "-s",
        str(script),
        url,
        "--",
        tag,
    ]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=duration_s + timeout_s + 30,
        check=False,
        start_new_session=True,
        preexec_fn=child_setup(LOAD_CPU),
    )
    m = re.search(r"^WRKJSON (\{.*\})$", proc.stdout, re.MULTILINE)
    if m is None:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    data = json.loads(m.group(1))
    result = RunResult("wrk")
    errors = data["connect"] + data["read"] + data["write"] + data["status"] + data["timeout"]
    # wrk counts a non-2xx answer both as a request and as a status error.
    result.requests = data["requests"] - data["status"]
    result.errors = errors
    result.status_errors = data["status"]
    result.elapsed_s = data["duration_us"] / 1e6
    result.wrk_p50_ms = data["p50_us"] / 1000
    result.wrk_p99_ms = data["p99_us"] / 1000
    if errors:
        result.error_sample = (
            f"wrk errors: connect {data['connect']}, read {data['read']}, write "
            f"{data['write']}, non-2xx {data['status']}, timeout {data['timeout']}"
        )
    return result
