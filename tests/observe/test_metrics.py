"""Metrics: plain state on the request path, samples with the right labels when scraped."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gateway.observe.metrics import (
    MAX_REQUEST_SERIES,
    NO_TEAM,
    OTHER_CATEGORY,
    TUNNEL_OUTCOMES,
    Histogram,
    Metrics,
)


def _samples(metrics: Metrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples called ``name``, by their sorted labels."""
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def _series(metrics: Metrics) -> dict[tuple[str, str, str, str], float]:
    out: dict[tuple[str, str, str, str], float] = {}
    for labels, value in _samples(metrics, "reefgate_requests_total").items():
        d = dict(labels)
        out[(d["team"], d["upstream"], d["decision"], d["category"])] = value
    return out


def test_counts_per_label_set() -> None:
    metrics = Metrics()
    metrics.count_request("openai", "allow", "none", "payments")
    metrics.count_request("openai", "allow", "none", "payments")
    metrics.count_request("openai", "deny", "secret", "payments")
    metrics.count_request("openai", "allow", "none", "research")
    metrics.count_request("unknown", "error", "not_found")
    assert _series(metrics) == {
        ("payments", "openai", "allow", "none"): 2.0,
        ("payments", "openai", "deny", "secret"): 1.0,
        ("research", "openai", "allow", "none"): 1.0,
        (NO_TEAM, "unknown", "error", "not_found"): 1.0,
    }


def test_invented_categories_cannot_grow_the_series_without_bound() -> None:
    metrics = Metrics()
    for i in range(MAX_REQUEST_SERIES + 300):
        metrics.count_request("openai", "deny", f"made-up-{i}", "t")
    metrics.count_request("openai", "deny", "made-up-0", "t")  # an existing series still counts
    series = _series(metrics)
    assert len(series) == MAX_REQUEST_SERIES + 1
    assert series[("t", "openai", "deny", OTHER_CATEGORY)] == 300.0
    assert series[("t", "openai", "deny", "made-up-0")] == 2.0
    assert sum(series.values()) == MAX_REQUEST_SERIES + 301


def test_histogram_buckets_are_cumulative_and_inclusive() -> None:
    histogram = Histogram((0.1, 1.0))
    for seconds in (0.05, 0.1, 0.5, 1.0, 7.0):
        histogram.observe(seconds)
    assert histogram.buckets() == [("0.1", 2.0), ("1.0", 4.0), ("+Inf", 5.0)]
    assert histogram.total == pytest.approx(8.65)


def test_guard_and_upstream_latency_histograms() -> None:
    metrics = Metrics()
    metrics.latency.observe(0.0003)
    metrics.observe_upstream("openai", 0.2)
    metrics.observe_upstream("openai", 40.0)
    metrics.observe_upstream("anthropic", 1.5)
    assert _samples(metrics, "reefgate_guard_seconds_count") == {(): 1.0}
    assert _samples(metrics, "reefgate_guard_seconds_bucket")[(("le", "0.0005"),)] == 1.0
    assert _samples(metrics, "reefgate_guard_seconds_bucket")[(("le", "0.00025"),)] == 0.0
    assert _samples(metrics, "reefgate_upstream_seconds_count") == {
        (("upstream", "openai"),): 2.0,
        (("upstream", "anthropic"),): 1.0,
    }
    buckets = _samples(metrics, "reefgate_upstream_seconds_bucket")
    assert buckets[(("le", "0.25"), ("upstream", "openai"))] == 1.0
    assert buckets[(("le", "60.0"), ("upstream", "openai"))] == 2.0
    assert buckets[(("le", "+Inf"), ("upstream", "anthropic"))] == 1.0
    assert _samples(metrics, "reefgate_upstream_seconds_sum")[
        (("upstream", "openai"),)
    ] == pytest.approx(40.2)


def test_tunnels_by_outcome() -> None:
    metrics = Metrics()
    # Every outcome is there from the start, at zero.
    assert _samples(metrics, "reefgate_tunnels_total") == {
        (("outcome", outcome),): 0.0 for outcome in TUNNEL_OUTCOMES
    }
    metrics.count_tunnel("intercepted")
    metrics.count_tunnel("intercepted")
    metrics.count_tunnel("refused")
    metrics.count_tunnel("tunnelled")
    metrics.count_tunnel("failed")
    assert _samples(metrics, "reefgate_tunnels_total") == {
        (("outcome", "intercepted"),): 2.0,
        (("outcome", "tunnelled"),): 1.0,
        (("outcome", "refused"),): 1.0,
        (("outcome", "failed"),): 1.0,
    }
    with pytest.raises(ValueError, match="outcome"):
        metrics.count_tunnel("bogus")
    assert b'reefgate_tunnels_total{outcome="intercepted"} 2.0' in metrics.render()


def test_tool_calls_and_breaker_trips() -> None:
    metrics = Metrics()
    metrics.count_tool_call("deny", "rules")
    metrics.count_tool_call("deny", "rules")
    metrics.count_tool_call("allow", "policy_allow")
    metrics.count_breaker_trip()
    assert _samples(metrics, "reefgate_tool_calls_total") == {
        (("outcome", "deny"), ("rule", "rules")): 2.0,
        (("outcome", "allow"), ("rule", "policy_allow")): 1.0,
    }
    assert _samples(metrics, "reefgate_breaker_trips_total") == {(): 1.0}


@dataclass
class _GuardCounts:
    bytes_scanned: int = 0
    classifier_calls: int = 0
    text_cache_hits: int = 0
    text_cache_misses: int = 0
    verdict_cache_hits: int = 0
    verdict_cache_misses: int = 0


def test_guard_counters_are_taken_in_at_scrape() -> None:
    metrics = Metrics()
    guard = _GuardCounts(100, 2, 5, 3, 1, 2)
    metrics.sync_guard(guard)
    guard.bytes_scanned, guard.text_cache_hits = 150, 9
    # Not seen until the next scrape's sync.
    assert _samples(metrics, "reefgate_bytes_scanned_total") == {(): 100.0}
    metrics.sync_guard(guard)
    metrics.sync_guard(guard)  # nothing new: nothing added
    assert _samples(metrics, "reefgate_bytes_scanned_total") == {(): 150.0}
    assert _samples(metrics, "reefgate_classifier_calls_total") == {(): 2.0}
    assert _samples(metrics, "reefgate_verdict_cache_hits_total") == {
        (("cache", "floor"),): 9.0,
        (("cache", "classifier"),): 1.0,
    }
    assert _samples(metrics, "reefgate_verdict_cache_misses_total") == {
        (("cache", "floor"),): 3.0,
        (("cache", "classifier"),): 2.0,
    }


def test_a_new_guard_counts_on_and_never_back() -> None:
    metrics = Metrics()
    metrics.sync_guard(_GuardCounts(bytes_scanned=1000))
    # A reloaded config brings a Guard counting from zero.
    metrics.sync_guard(_GuardCounts(bytes_scanned=40))
    assert _samples(metrics, "reefgate_bytes_scanned_total") == {(): 1040.0}


def test_pending_reviews_gauge_is_what_the_last_scrape_read() -> None:
    metrics = Metrics()
    assert _samples(metrics, "reefgate_reviews_pending") == {}
    metrics.set_pending_reviews({"payments": 2, "research": 0})
    assert _samples(metrics, "reefgate_reviews_pending") == {
        (("team", "payments"),): 2.0,
        (("team", "research"),): 0.0,
    }
    # The stores could not be read: left out, never stale.
    metrics.set_pending_reviews(None)
    assert _samples(metrics, "reefgate_reviews_pending") == {}


def test_render_is_the_prometheus_text_format() -> None:
    metrics = Metrics()
    metrics.count_request("openai", "allow", "none", "default")
    text = metrics.render().decode()
    assert "# TYPE reefgate_requests_total counter" in text
    assert (
        'reefgate_requests_total{category="none",decision="allow",team="default",'
        'upstream="openai"} 1.0'
    ) in text
    assert "# TYPE reefgate_upstream_seconds histogram" in text
    assert "# TYPE reefgate_reviews_pending gauge" in text
