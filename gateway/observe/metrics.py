"""Prometheus metrics, one registry per application so tests and apps stay independent.

The request path only adds to plain ints, floats and dicts: a prometheus_client
metric takes a lock and, with labels, a validated lookup per update, which
would be most of what metrics cost a request. The collector below turns that
state into samples when ``/metrics`` is scraped; the guard's own counters
(plain ints on the Guard) are read then too, with :meth:`Metrics.sync_guard`,
and so are the pending reviews, with :meth:`Metrics.set_pending_reviews`.

Everything here is used from the event loop thread only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from typing import Final, Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

__all__ = [
    "CONTENT_TYPE_LATEST",
    "MAX_REQUEST_SERIES",
    "NO_TEAM",
    "OTHER_CATEGORY",
    "TUNNEL_OUTCOMES",
    "GuardCounters",
    "Histogram",
    "Metrics",
]

# Distinct (team, upstream, decision, category) series of the request counter;
# past this, new categories are counted as OTHER_CATEGORY.
MAX_REQUEST_SERIES: Final = 512
OTHER_CATEGORY: Final = "other"
# The team label of a request that never got as far as a team.
NO_TEAM: Final = "none"

# What became of a forward-proxy CONNECT: opened and inspected, passed through
# unread (an allowlisted host), refused, or failed to open.
TUNNEL_OUTCOMES: Final = ("intercepted", "tunnelled", "refused", "failed")

GUARD_BUCKETS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5, 15)
# An upstream's time to its response headers: milliseconds for a cached or
# small answer, seconds to minutes for a model thinking before it streams.
UPSTREAM_BUCKETS: Final = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    120,
    300,
)


class GuardCounters(Protocol):
    """The counters a Guard keeps as plain ints, read at scrape time."""

    bytes_scanned: int
    classifier_calls: int
    text_cache_hits: int
    text_cache_misses: int
    verdict_cache_hits: int
    verdict_cache_misses: int


_GUARD_COUNTERS: Final = (
    "bytes_scanned",
    "classifier_calls",
    "text_cache_hits",
    "text_cache_misses",
    "verdict_cache_hits",
    "verdict_cache_misses",
)


class Histogram:
    """Bucket counts and a sum, cumulated only when rendered."""

    __slots__ = ("_bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = tuple(float(b) for b in bounds)
        # One count per bound, and the last for values above every bound.
        self.counts = [0] * (len(self._bounds) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        # Buckets are "less than or equal": bisect_left puts a value equal to a
        # bound in that bound's bucket.
        self.counts[bisect_left(self._bounds, seconds)] += 1
        self.total += seconds

    def buckets(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        seen = 0
        for bound, count in zip((*self._bounds, float("inf")), self.counts, strict=True):
            seen += count
            out.append((_le(bound), float(seen)))
        return out


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # reefgate_guard_seconds: time from request received to verdict.
        self.latency = Histogram(GUARD_BUCKETS)
        self._upstream: dict[str, Histogram] = {}
        self._requests: dict[tuple[str, str, str, str], int] = {}
        self._tool_calls: dict[tuple[str, str], int] = {}
        self._tunnels: dict[str, int] = dict.fromkeys(TUNNEL_OUTCOMES, 0)
        self.breaker_trips = 0
        # The guard's counters: totals so far, and what the Guard read last held.
        self._guard_totals = dict.fromkeys(_GUARD_COUNTERS, 0)
        self._guard_last = dict.fromkeys(_GUARD_COUNTERS, 0)
        self._guard: object = None
        self._pending: dict[str, int] | None = None
        self.registry.register(_Collector(self))

    # -- the request path: plain updates --

    def count_request(
        self, upstream: str, decision: str, category: str, team: str = NO_TEAM
    ) -> None:
        key = (team, upstream, decision, category)
        requests = self._requests
        if key in requests:
            requests[key] += 1
        elif len(requests) < MAX_REQUEST_SERIES:
            requests[key] = 1
        else:
            # A classifier's category is free text (1..128 characters): one
            # steered into inventing new ones must not grow the gateway's
            # memory and the scraper's series without bound.
            key = (team, upstream, decision, OTHER_CATEGORY)
            requests[key] = requests.get(key, 0) + 1

    def observe_upstream(self, upstream: str, seconds: float) -> None:
        """Time from forwarding to the upstream's response headers."""
        histogram = self._upstream.get(upstream)
        if histogram is None:
            histogram = self._upstream[upstream] = Histogram(UPSTREAM_BUCKETS)
        histogram.observe(seconds)

    def count_tool_call(self, outcome: str, rule: str) -> None:
        # Both come from the guardian's fixed vocabulary, so the series stay few.
        key = (outcome, rule)
        self._tool_calls[key] = self._tool_calls.get(key, 0) + 1

    def count_breaker_trip(self) -> None:
        self.breaker_trips += 1

    def count_tunnel(self, outcome: str) -> None:
        """One forward-proxy CONNECT, by what became of it (one of TUNNEL_OUTCOMES)."""
        if outcome not in TUNNEL_OUTCOMES:
            raise ValueError(f"unknown tunnel outcome {outcome!r}")
        self._tunnels[outcome] += 1

    # -- scrape time --

    def sync_guard(self, guard: GuardCounters) -> None:
        """Take in what the guard counted since the last scrape.

        A different Guard than last time (the config was reloaded) counts
        from zero, so its counts are added whole and the totals never go back.
        """
        last = self._guard_last
        if guard is not self._guard:
            self._guard = guard
            last = self._guard_last = dict.fromkeys(_GUARD_COUNTERS, 0)
        totals = self._guard_totals
        for name in _GUARD_COUNTERS:
            value: int = getattr(guard, name)
            totals[name] += max(value - last[name], 0)
            last[name] = value

    def set_pending_reviews(self, by_team: Mapping[str, int] | None) -> None:
        """Pending reviews per team as the stores count them now; None when they cannot."""
        self._pending = None if by_team is None else dict(by_team)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Collector:
    """The samples of a Metrics object, made when the registry is collected."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def describe(self) -> list[Metric]:
        # The names alone, without walking the state: the registry checks them
        # for duplicates when the collector is registered.
        return list(self._families(empty=True))

    def collect(self) -> Iterator[Metric]:
        return self._families(empty=False)

    def _families(self, *, empty: bool) -> Iterator[Metric]:
        m = self._metrics

        requests = CounterMetricFamily(
            "reefgate_requests",
            "Requests handled, by team, upstream, decision and category.",
            labels=("team", "upstream", "decision", "category"),
        )
        if not empty:
            for key, count in m._requests.items():
                requests.add_metric(key, count)
        yield requests

        guard = HistogramMetricFamily(
            "reefgate_guard_seconds",
            "Time from request received to verdict, before any upstream call.",
            labels=(),
        )
        if not empty:
            guard.add_metric((), m.latency.buckets(), m.latency.total)
        yield guard

        upstream = HistogramMetricFamily(
            "reefgate_upstream_seconds",
            "Time from forwarding a request to the upstream's response headers, by upstream.",
            labels=("upstream",),
        )
        if not empty:
            for name, histogram in m._upstream.items():
                upstream.add_metric((name,), histogram.buckets(), histogram.total)
        yield upstream

        totals = m._guard_totals
        yield _counter(
            "reefgate_bytes_scanned",
            "Characters of text run through the deterministic detectors.",
            None if empty else totals["bytes_scanned"],
        )
        yield _counter(
            "reefgate_classifier_calls",
            "Calls made to the LLM classifier (cache misses).",
            None if empty else totals["classifier_calls"],
        )
        for outcome, doc in (
            ("hits", "Verdict cache lookups that found a verdict, by cache."),
            ("misses", "Verdict cache lookups that found none, by cache."),
        ):
            family = CounterMetricFamily(
                f"reefgate_verdict_cache_{outcome}", doc, labels=("cache",)
            )
            if not empty:
                family.add_metric(("floor",), totals[f"text_cache_{outcome}"])
                family.add_metric(("classifier",), totals[f"verdict_cache_{outcome}"])
            yield family

        tool_calls = CounterMetricFamily(
            "reefgate_tool_calls",
            "Tool calls in answers judged by the guardian, by outcome and deciding rule.",
            labels=("outcome", "rule"),
        )
        if not empty:
            for pair, count in m._tool_calls.items():
                tool_calls.add_metric(pair, count)
        yield tool_calls

        yield _counter(
            "reefgate_breaker_trips",
            "Turns whose circuit breaker tripped: the guardian refused the agent too often.",
            None if empty else m.breaker_trips,
        )

        tunnels = CounterMetricFamily(
            "reefgate_tunnels",
            "Forward-proxy CONNECT tunnels, by outcome.",
            labels=("outcome",),
        )
        if not empty:
            for outcome, count in m._tunnels.items():
                tunnels.add_metric((outcome,), count)
        yield tunnels

        pending = GaugeMetricFamily(
            "reefgate_reviews_pending",
            "Reviews waiting for a reviewer, by team, as the review stores count them at scrape.",
            labels=("team",),
        )
        if not empty and m._pending is not None:
            for team, count in sorted(m._pending.items()):
                pending.add_metric((team,), count)
        yield pending


def _counter(name: str, doc: str, value: float | None) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=())
    if value is not None:
        family.add_metric((), value)
    return family


def _le(bound: float) -> str:
    # As prometheus_client writes a bucket bound (its helper is untyped); the
    # bounds here are all short decimals.
    return "+Inf" if bound == float("inf") else repr(bound)
