"""Time to first token of a streamed answer: direct, bare aiohttp proxy, reefgate.

The same streamed chat completion is asked for (a) straight from the fake
upstream, (b) through the bare aiohttp pass-through proxy and (c) through
`reefgate serve` with the shipped config. Time to first token (TTFT) runs
from sending the request to receiving the first SSE event whose JSON has a
non-empty `choices[0].delta.content`; time to the whole answer runs to the
`[DONE]` event. Each request is the ~4 KB, 10-message agent turn of the
overhead benchmark, with a new user message and tool result every time, so
the gateway scans fresh text before it forwards the request.

The fake upstream writes its events a few milliseconds apart, as a model
writes tokens, so the first token reaches a proxy on its own and what is
measured is the proxy's relay of that one event, not of the whole answer.

A second scenario answers with text and then a tool call in fragments
(finish reason `tool_calls`). The gateway sends the text at once and holds
the call until it is whole and judged; its time to the call is when the
client has the whole call and the finish reason, the moment an SDK can hand
the call to the agent, for every target alike.

The proxy under test runs on core 0; the fake upstream and the client share
core 1. Requests go one at a time, interleaved across targets request by
request (the order rotating every round); each figure is the median over
rounds of that round's percentile, and the added figures are differences of
those medians within this one run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench import fake_upstream as fake
from bench._common import (
    LOAD_CPU,
    PROXY_CPU,
    REEFGATE_READY,
    SERVICE_READY,
    Options,
    Report,
    Services,
    Target,
    clean_number,
    describe_machine,
    gateway_config,
    loadavg,
    machine_info,
    median,
    percentile,
    progress,
    python_module,
    reefgate_argv,
    run_service_bench,
    table,
    targets_json,
    targets_table,
)
from bench._corpus import AgentTurns
from bench._loadgen import HEADERS

CHAT = "/v1/chat/completions"
# The fake upstream answers a path with this segment with a tool-call stream.
TOOL_PREFIX = "/tool-call"
ORDER = ("direct", "bare", "reefgate")
SCENARIOS = ("text", "tool")
SCENARIO_LABEL = {
    "text": "streamed text answer",
    "tool": "streamed answer ending with a tool call",
}
# Pause between the fake upstream's events: apart enough that each is its own
# read at every hop, short enough that a full run stays within minutes.
TOKEN_GAP_MS = 2.0
TEXT_ANSWER = "".join(fake._TOKENS)
TOOL_ANSWER = "".join(fake.TOOL_TEXT)


@dataclass(frozen=True)
class Plan:
    rounds: int
    per_round: int  # requests per target and scenario in a round
    warmup: int  # requests per target and scenario before measuring

    @staticmethod
    def for_mode(opts: Options) -> Plan:
        if opts.smoke:
            return Plan(1, 2, 1)
        if opts.quick:
            return Plan(5, 20, 10)
        return Plan(20, 25, 30)


@dataclass
class Sample:
    first_ms: float  # the first event, the role chunk with empty content
    ttft_ms: float
    whole_ms: float
    call_ms: float | None = None


@dataclass
class Series:
    """One target's requests of one scenario, by round."""

    rounds: list[list[Sample]] = field(default_factory=list)
    errors: int = 0
    error_sample: str = ""

    @property
    def requests(self) -> int:
        return sum(len(r) for r in self.rounds)

    def per_round(self, metric: str, q: float) -> list[float]:
        out = []
        for samples in self.rounds:
            values = [getattr(s, metric) for s in samples if getattr(s, metric) is not None]
            if values:
                out.append(percentile(values, q))
        return out

    def stat(self, metric: str, q: float) -> float | None:
        """The median over rounds of each round's q-th percentile."""
        values = self.per_round(metric, q)
        return median(values) if values else None


@dataclass
class Endpoint:
    name: str
    label: str
    url: str = ""
    series: dict[str, Series] = field(
        default_factory=lambda: {scenario: Series() for scenario in SCENARIOS}
    )

    def url_for(self, scenario: str) -> str:
        # `url` ends where the upstream-relative path begins.
        return self.url + (TOOL_PREFIX if scenario == "tool" else "") + CHAT


class Failed(Exception):
    pass


def _events(buf: bytes) -> tuple[list[bytes], bytes]:
    """The data of each whole event in `buf`, and what is left of it."""
    out: list[bytes] = []
    while True:
        end = buf.find(b"\n\n")
        if end < 0:
            return out, buf
        block, buf = buf[:end], buf[end + 2 :]
        data = [line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
        if data:
            out.append(b"\n".join(data))


async def measure_one(
    session: aiohttp.ClientSession, url: str, body: bytes, scenario: str
) -> Sample:
    """One streamed answer, every event timed when the read that brought it returned."""
    content: list[str] = []
    name: list[str] = []
    arguments: list[str] = []
    first: float | None = None
    ttft: float | None = None
    done: float | None = None
    call: float | None = None
    finish: object = None
    buf = b""
    t0 = time.perf_counter()
    async with session.post(url, data=body, headers=HEADERS) as resp:
        if resp.status != 200:
            answer = (await resp.read())[:200].decode(errors="replace")
            raise Failed(f"HTTP {resp.status}: {answer}")
        while True:
            chunk = await resp.content.readany()
            now = time.perf_counter()
            if not chunk:
                break
            # Normalised on the whole buffer, so a CR LF split across reads is caught.
            events, buf = _events((buf + chunk).replace(b"\r\n", b"\n"))
            for data in events:
                if first is None:
                    first = now
                if data.strip() == b"[DONE]":
                    done = now
                    continue
                try:
                    event = json.loads(data)
                except ValueError as exc:
                    raise Failed(f"not JSON: {data[:200]!r}") from exc
                choices = event.get("choices") or []
                if not choices:
                    continue
                delta = choices[0].get("delta") or {}
                text = delta.get("content")
                if isinstance(text, str) and text:
                    content.append(text)
                    if ttft is None:
                        ttft = now
                for fragment in delta.get("tool_calls") or []:
                    function = fragment.get("function") or {}
                    name.append(function.get("name") or "")
                    arguments.append(function.get("arguments") or "")
                if choices[0].get("finish_reason") is not None:
                    finish = choices[0]["finish_reason"]
                    if name or arguments:
                        call = now
    expected = TOOL_ANSWER if scenario == "tool" else TEXT_ANSWER
    if first is None or ttft is None or done is None:
        raise Failed(f"no {'token' if ttft is None else '[DONE]'} in the answer")
    if "".join(content) != expected:
        raise Failed(f"text changed on the way: {''.join(content)[:200]!r}")
    if scenario == "tool":
        got = ("".join(name), "".join(arguments), finish)
        if got != (fake.TOOL_CALL_NAME, fake.TOOL_CALL_ARGUMENTS, "tool_calls") or call is None:
            raise Failed(f"the tool call was not released as sent: {got!r}")
    elif finish != "stop":
        raise Failed(f"finish reason {finish!r}")
    return Sample(
        (first - t0) * 1000,
        (ttft - t0) * 1000,
        (done - t0) * 1000,
        (call - t0) * 1000 if call is not None else None,
    )


class Bench:
    def __init__(self, opts: Options, services: Services, tmp: Path) -> None:
        self.opts = opts
        self.plan = Plan.for_mode(opts)
        self.services = services
        self.tmp = tmp
        self.turns = AgentTurns()
        self.tag = f"ttft{int(time.time())}"
        self.n = 0
        self.endpoints = {
            "direct": Endpoint("direct", "(a) direct to the fake upstream"),
            "bare": Endpoint("bare", "(b) bare aiohttp proxy"),
            "reefgate": Endpoint("reefgate", "(c) reefgate serve, shipped config"),
        }
        self.load_at_start = loadavg()

    def start(self) -> None:
        svc = self.services
        upstream = svc.spawn(
            "fake-upstream",
            python_module("bench.fake_upstream", "--token-gap-ms", str(TOKEN_GAP_MS)),
            cpu=LOAD_CPU,
        )
        svc.wait_line(upstream, SERVICE_READY, 30)
        bare = svc.spawn(
            "bare-proxy",
            python_module("bench.bare_proxy", "--upstream", upstream.url),
            cpu=PROXY_CPU,
        )
        config = gateway_config(self.tmp / "reefgate-config", upstream.url)
        gateway = svc.spawn("reefgate", reefgate_argv(config), cpu=PROXY_CPU, cwd=self.tmp)
        svc.wait_line(bare, SERVICE_READY, 30)
        svc.wait_line(gateway, REEFGATE_READY, 60)
        self.endpoints["direct"].url = upstream.url
        self.endpoints["bare"].url = bare.url + "/openai"
        self.endpoints["reefgate"].url = gateway.url + "/openai"

    def _body(self) -> bytes:
        self.n += 1
        return self.turns.body(self.n, self.tag, True)

    async def _request(
        self, session: aiohttp.ClientSession, ep: Endpoint, scenario: str
    ) -> Sample | str:
        try:
            return await measure_one(session, ep.url_for(scenario), self._body(), scenario)
        except (Failed, aiohttp.ClientError, TimeoutError) as exc:
            return f"{type(exc).__name__}: {exc}"

    async def run(self) -> None:
        plan = self.plan
        eps = [self.endpoints[name] for name in ORDER]
        timeout = aiohttp.ClientTimeout(total=60)
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), timeout=timeout, auto_decompress=False
        ) as session:
            # A target that answers wrong is not measured.
            for ep in eps:
                for scenario in SCENARIOS:
                    result = await self._request(session, ep, scenario)
                    if isinstance(result, str):
                        raise RuntimeError(f"{ep.label}, {SCENARIO_LABEL[scenario]}: {result}")
            progress(f"warm-up: {plan.warmup} requests per target and scenario")
            for _ in range(plan.warmup):
                for ep in eps:
                    for scenario in SCENARIOS:
                        await self._request(session, ep, scenario)
            for r in range(plan.rounds):
                if r % 5 == 0:
                    progress(f"round {r + 1}/{plan.rounds}")
                shift = r % len(eps)
                order = eps[shift:] + eps[:shift]
                for ep in eps:
                    for scenario in SCENARIOS:
                        ep.series[scenario].rounds.append([])
                for i in range(plan.per_round):
                    # Scenarios alternate too, so neither always follows the other.
                    scenarios = SCENARIOS if (r + i) % 2 == 0 else SCENARIOS[::-1]
                    for scenario in scenarios:
                        for ep in order:
                            series = ep.series[scenario]
                            result = await self._request(session, ep, scenario)
                            if isinstance(result, str):
                                series.errors += 1
                                series.error_sample = series.error_sample or result
                            else:
                                series.rounds[-1].append(result)

    # -- reporting --

    def stat(self, name: str, scenario: str, metric: str, q: float = 50) -> float | None:
        return self.endpoints[name].series[scenario].stat(metric, q)

    def added(
        self, name: str, base: str, scenario: str, metric: str, q: float = 50
    ) -> float | None:
        a, b = self.stat(name, scenario, metric, q), self.stat(base, scenario, metric, q)
        if a is None or b is None:
            return None
        return clean_number(a - b, 4)

    def ratio(self, name: str, base: str, scenario: str, metric: str) -> float | None:
        a, b = self.stat(name, scenario, metric), self.stat(base, scenario, metric)
        if a is None or b is None or b <= 0:
            return None
        return clean_number(a / b, 3)

    def spread(self, name: str, base: str, scenario: str, metric: str) -> list[float] | None:
        """The quartiles of the per-round differences of medians: how steady the added figure is."""
        a = self.endpoints[name].series[scenario].per_round(metric, 50)
        b = self.endpoints[base].series[scenario].per_round(metric, 50)
        if not a or len(a) != len(b):
            return None
        diffs = [x - y for x, y in zip(a, b, strict=True)]
        return [round(percentile(diffs, 25), 4), round(percentile(diffs, 75), 4)]

    def _summary(self, name: str, scenario: str) -> dict[str, Any]:
        series = self.endpoints[name].series[scenario]
        out: dict[str, Any] = {"requests": series.requests, "errors": series.errors}
        metrics = (
            ("first", "ttft", "call", "whole") if scenario == "tool" else ("first", "ttft", "whole")
        )
        for metric in metrics:
            for q in (50, 90):
                out[f"{metric}_p{q}_ms"] = clean_number(
                    self.stat(name, scenario, f"{metric}_ms", q)
                )
        if name != "direct":
            for metric in metrics:
                out[f"{metric}_added_ms"] = self.added(name, "direct", scenario, f"{metric}_ms")
        if series.error_sample:
            out["error_sample"] = series.error_sample
        return out

    def report(self) -> Report:
        plan = self.plan
        rep = Report("ttft: time to first token of a streamed answer, reefgate vs direct and bare")
        info = machine_info()
        info["loadavg_1m_at_start"] = self.load_at_start
        busy = max(self.load_at_start, info["loadavg_1m"]) > info["cpus"]
        rep.add(
            "setup",
            "\n".join(
                [
                    f"mode {self.opts.mode}; {describe_machine(info)}",
                    f"proxy under test pinned to core {PROXY_CPU}, fake upstream and client "
                    f"to core {LOAD_CPU}",
                    f"request: {len(self.turns.body(0, self.tag, True))} B, 10 messages, "
                    '"stream": true; user message 7 and tool result 9 new on every request',
                    f"answers: text = role event, {len(fake._TOKENS)} text tokens, finish, usage, "
                    f"[DONE]; tool = role event, {len(fake.TOOL_TEXT)} text tokens, "
                    f"{fake.TOOL_CALL_NAME} in {len(fake.TOOL_ARGUMENT_PIECES) + 1} fragments, "
                    f"finish tool_calls, usage, [DONE]; events {TOKEN_GAP_MS:g} ms apart",
                    f"{plan.rounds} round(s) x {plan.per_round} requests per target and "
                    f"scenario, one at a time, interleaved request by request; "
                    f"{plan.warmup} warm-up requests each; figures are medians over rounds of "
                    "each round's percentile",
                    "TTFT: request sent -> first event with non-empty choices[0].delta.content "
                    f"(1st event: -> the role event, sent {TOKEN_GAP_MS:g} ms before it); "
                    "call: -> the whole tool call and its finish reason received; "
                    "whole: -> [DONE] received",
                    f"load average {self.load_at_start:.2f} at start, {info['loadavg_1m']:.2f} "
                    f"at end; benchmark processes at nice {info['nice']}"
                    + (
                        " - OTHER PROCESSES COMPETED FOR THE CPU: figures are noisy" if busy else ""
                    ),
                ]
            ),
        )

        text_rows: list[list[object]] = []
        for name in ORDER:
            s = self.endpoints[name].series["text"]
            text_rows.append(
                [
                    name,
                    s.requests,
                    s.errors,
                    self.stat(name, "text", "ttft_ms"),
                    self.stat(name, "text", "ttft_ms", 90),
                    self.added(name, "direct", "text", "ttft_ms") if name != "direct" else None,
                    self.added(name, "bare", "text", "ttft_ms") if name == "reefgate" else None,
                    self.ratio(name, "direct", "text", "ttft_ms") if name != "direct" else None,
                    self.stat(name, "text", "first_ms"),
                    self.added(name, "direct", "text", "first_ms") if name != "direct" else None,
                    self.stat(name, "text", "whole_ms"),
                    self.stat(name, "text", "whole_ms", 90),
                    self.added(name, "direct", "text", "whole_ms") if name != "direct" else None,
                ]
            )
        rep.add(
            f"{SCENARIO_LABEL['text']} (ms; + = added, x = ratio of medians)",
            table(
                [
                    "target",
                    "requests",
                    "errors",
                    "TTFT p50",
                    "TTFT p90",
                    "+TTFT vs direct",
                    "+TTFT vs bare",
                    "x direct",
                    "1st event p50",
                    "+1st vs direct",
                    "whole p50",
                    "whole p90",
                    "+whole vs direct",
                ],
                text_rows,
                digits=3,
            ),
        )

        tool_rows: list[list[object]] = []
        for name in ORDER:
            s = self.endpoints[name].series["tool"]
            tool_rows.append(
                [
                    name,
                    s.requests,
                    s.errors,
                    self.stat(name, "tool", "ttft_ms"),
                    self.stat(name, "tool", "ttft_ms", 90),
                    self.added(name, "direct", "tool", "ttft_ms") if name != "direct" else None,
                    self.stat(name, "tool", "call_ms"),
                    self.stat(name, "tool", "call_ms", 90),
                    self.added(name, "direct", "tool", "call_ms") if name != "direct" else None,
                    self.added(name, "bare", "tool", "call_ms") if name == "reefgate" else None,
                    self.stat(name, "tool", "whole_ms"),
                ]
            )
        rep.add(
            f"{SCENARIO_LABEL['tool']} (ms; call = the whole call and its finish reason; "
            "reefgate releases it once judged)",
            table(
                [
                    "target",
                    "requests",
                    "errors",
                    "TTFT p50",
                    "TTFT p90",
                    "+TTFT vs direct",
                    "call p50",
                    "call p90",
                    "+call vs direct",
                    "+call vs bare",
                    "whole p50",
                ],
                tool_rows,
                digits=3,
            ),
        )

        errors = [
            f"{name} {scenario}: {ep.series[scenario].errors} failed, e.g. "
            f"{ep.series[scenario].error_sample}"
            for name, ep in self.endpoints.items()
            for scenario in SCENARIOS
            if ep.series[scenario].errors
        ]
        if errors:
            rep.add("errors", "\n".join(errors))

        reasons: dict[str, str] = {}

        def need(
            key: str, value: float | None, why: str = "no answer was measured"
        ) -> float | None:
            if value is None:
                reasons[key] = why
            return value

        data: dict[str, Any] = {
            "benchmark": "ttft",
            "mode": self.opts.mode,
            "ttft_added_ms": need(
                "ttft_added_ms", self.added("reefgate", "direct", "text", "ttft_ms")
            ),
            "ttft_added_vs_bare_ms": need(
                "ttft_added_vs_bare_ms", self.added("reefgate", "bare", "text", "ttft_ms")
            ),
            "ttft_ratio_vs_direct": need(
                "ttft_ratio_vs_direct", self.ratio("reefgate", "direct", "text", "ttft_ms")
            ),
            "ttft_ratio_vs_bare": need(
                "ttft_ratio_vs_bare", self.ratio("reefgate", "bare", "text", "ttft_ms")
            ),
            "ttft_p90_added_ms": need(
                "ttft_p90_added_ms", self.added("reefgate", "direct", "text", "ttft_ms", 90)
            ),
            "bare_ttft_added_ms": need(
                "bare_ttft_added_ms", self.added("bare", "direct", "text", "ttft_ms")
            ),
            "first_event_added_ms": need(
                "first_event_added_ms", self.added("reefgate", "direct", "text", "first_ms")
            ),
            "whole_added_ms": need(
                "whole_added_ms", self.added("reefgate", "direct", "text", "whole_ms")
            ),
            "tool_ttft_added_ms": need(
                "tool_ttft_added_ms", self.added("reefgate", "direct", "tool", "ttft_ms")
            ),
            "tool_call_added_ms": need(
                "tool_call_added_ms", self.added("reefgate", "direct", "tool", "call_ms")
            ),
            "tool_call_added_vs_bare_ms": need(
                "tool_call_added_vs_bare_ms", self.added("reefgate", "bare", "tool", "call_ms")
            ),
            "ttft_added_ms_round_iqr": self.spread("reefgate", "direct", "text", "ttft_ms"),
            "tool_call_added_ms_round_iqr": self.spread("reefgate", "direct", "tool", "call_ms"),
            "token_gap_ms": TOKEN_GAP_MS,
            "plan": {"rounds": plan.rounds, "per_round": plan.per_round, "warmup": plan.warmup},
            "machine": info,
            "results": {
                scenario: {name: self._summary(name, scenario) for name in ORDER}
                for scenario in SCENARIOS
            },
        }

        iqr = data["ttft_added_ms_round_iqr"]
        call_iqr = data["tool_call_added_ms_round_iqr"]
        rep.add(
            "in this run",
            "\n".join(
                [
                    f"reefgate adds {fmt_ms(data['ttft_added_ms'])} to the time to first token "
                    f"over direct (median; per-round quartiles {fmt_range(iqr)}), "
                    f"{fmt_ms(data['ttft_added_vs_bare_ms'])} over the bare aiohttp proxy, "
                    f"which adds {fmt_ms(data['bare_ttft_added_ms'])}; "
                    f"TTFT ratio to direct {fmt_x(data['ttft_ratio_vs_direct'])}",
                    f"the whole text answer: {fmt_ms(data['whole_added_ms'])} added; "
                    f"with a tool call: first token {fmt_ms(data['tool_ttft_added_ms'])}, "
                    f"the released call {fmt_ms(data['tool_call_added_ms'])} added over direct "
                    f"(per-round quartiles {fmt_range(call_iqr)}), "
                    f"{fmt_ms(data['tool_call_added_vs_bare_ms'])} over bare",
                ]
            ),
        )

        targets = [
            Target(
                "added TTFT over direct, streamed text",
                data["ttft_added_ms"],
                "<=",
                0.5,
                "ms",
                "the overhead benchmark's goal for added TTFB",
            ),
            Target(
                "failed requests",
                float(
                    sum(ep.series[s].errors for ep in self.endpoints.values() for s in SCENARIOS)
                ),
                "==",
                0,
            ),
        ]
        data["targets"] = targets_json(targets)
        data["null_reasons"] = reasons
        rep.add("targets", targets_table(targets))
        rep.data = data
        return rep


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f} ms"


def fmt_x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def fmt_range(values: list[float] | None) -> str:
    return "-" if not values else f"{values[0]:+.3f}..{values[1]:+.3f} ms"


def main(argv: Sequence[str]) -> int:
    return run_service_bench("ttft", argv, Bench)
