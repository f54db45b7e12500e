"""The request counter: one series per label set, and a bound on how many."""

from __future__ import annotations

from gateway.observe.metrics import MAX_REQUEST_SERIES, OTHER_CATEGORY, Metrics


def _series(metrics: Metrics) -> dict[tuple[str, str, str], float]:
    out: dict[tuple[str, str, str], float] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "reefgate_requests_total":
                labels = sample.labels
                out[(labels["upstream"], labels["decision"], labels["category"])] = sample.value
    return out


def test_counts_per_label_set() -> None:
    metrics = Metrics()
    metrics.count_request("openai", "allow", "none")
    metrics.count_request("openai", "allow", "none")
    metrics.count_request("openai", "deny", "secret")
    assert _series(metrics) == {("openai", "allow", "none"): 2.0, ("openai", "deny", "secret"): 1.0}


def test_invented_categories_cannot_grow_the_series_without_bound() -> None:
    metrics = Metrics()
    for i in range(MAX_REQUEST_SERIES + 300):
        metrics.count_request("openai", "deny", f"made-up-{i}")
    metrics.count_request("openai", "deny", "made-up-0")  # an existing series still counts
    series = _series(metrics)
    assert len(series) == MAX_REQUEST_SERIES + 1
    assert series[("openai", "deny", OTHER_CATEGORY)] == 300.0
    assert series[("openai", "deny", "made-up-0")] == 2.0
    assert sum(series.values()) == MAX_REQUEST_SERIES + 301
