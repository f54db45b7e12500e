"""Prometheus metrics, one registry per application so tests and apps stay independent."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "MAX_REQUEST_SERIES", "OTHER_CATEGORY", "Metrics"]

# Distinct (upstream, decision, category) series of the request counter; past
# this, new categories are counted as OTHER_CATEGORY.
MAX_REQUEST_SERIES = 512
OTHER_CATEGORY = "other"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "reefgate_requests",
            "Requests handled, by upstream, decision and category.",
            ["upstream", "decision", "category"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "reefgate_guard_seconds",
            "Time from request received to verdict, before any upstream call.",
            buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5, 15),
            registry=self.registry,
        )
        self.bytes_scanned = Counter(
            "reefgate_bytes_scanned",
            "Characters of text run through the deterministic detectors.",
            registry=self.registry,
        )
        self.classifier_calls = Counter(
            "reefgate_classifier_calls",
            "Calls made to the LLM classifier (cache misses).",
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "reefgate_tool_calls",
            "Tool calls in answers judged by the guardian, by outcome and deciding rule.",
            ["outcome", "rule"],
            registry=self.registry,
        )
        self.tunnels = Counter(
            "reefgate_tunnels",
            "Forward-proxy CONNECTs and plain requests, by outcome.",
            ["outcome"],
            registry=self.registry,
        )

        # labels() validates, locks and looks up on every call; the label sets
        # seen in practice are few (upstreams x decisions x categories).
        self._request_children: dict[tuple[str, str, str], Counter] = {}

    def count_request(self, upstream: str, decision: str, category: str) -> None:
        key = (upstream, decision, category)
        child = self._request_children.get(key)
        if child is None:
            if len(self._request_children) >= MAX_REQUEST_SERIES:
                # A classifier's category is free text (1..128 characters): one
                # steered into inventing new ones must not grow the gateway's
                # memory and the scraper's series without bound.
                key = (upstream, decision, OTHER_CATEGORY)
                child = self._request_children.get(key)
            if child is None:
                child = self._request_children[key] = self.requests.labels(*key)
        child.inc()

    def count_tool_call(self, outcome: str, rule: str) -> None:
        # Both come from the guardian's fixed vocabulary, so the series stay few.
        self.tool_calls.labels(outcome, rule).inc()

    def count_tunnel(self, outcome: str) -> None:
        # intercepted, tunnelled, refused or failed: a fixed set.
        self.tunnels.labels(outcome).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
