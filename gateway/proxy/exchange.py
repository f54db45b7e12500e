"""One request through the gateway, whichever entrance it came in by.

An :class:`Exchange` is created by the request-id middleware, filled in by the
steps of a proxy handler (resolve, read, inspect, forward, relay) and written
to the audit log by the audit middleware, so its fields are the audit schema.
Its :class:`Phase` says how far the request got, which decides what an error
may still do: before ``CHECKED`` nothing has left and the entry must not read
as an allow; from ``STREAMING`` on the client has the response headers and a
failure can only cut the stream.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from gateway.config.models import Flavor
from gateway.config.teams import TeamMatch
from gateway.guard.decision import Decision, Evidence
from gateway.guard.floor import REDACTED, shown
from gateway.proxy.origin import Origin

# Methods the audit may name as sent; any other token the client chose is
# checked like any other client-chosen string before it is written.
METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Phase(IntEnum):
    RECEIVED = 0  # nothing is known about the request yet
    ROUTED = 1  # upstream and team are resolved
    CHECKED = 2  # the verdict is final; nothing has gone upstream yet
    FORWARDED = 3  # the upstream has the request
    STREAMING = 4  # the client has the response headers


def ms(seconds: float) -> float:
    """``seconds`` in milliseconds to the microsecond, for the audit entry.

    The whole number of microseconds over 1000 is the double nearest that
    decimal, as ``round(x, 3)`` gives; round takes a decimal conversion
    there and back, several times the cost of the rest of an entry's numbers.
    """
    return int(seconds * 1_000_000 + 0.5) / 1000


@dataclass(frozen=True, slots=True)
class Route:
    name: str
    base_url: str
    flavor: Flavor
    custody_key: str | None
    origin: Origin
    # Secret kinds the upstream's own credential header may carry as sent.
    key_kinds: frozenset[str]


# init=False and an __init__ of its own: the dataclass's generated __init__ is
# Python code, which a compiled module would run for every request.
@dataclass(slots=True, init=False)
class Exchange:
    request_id: str
    method: str
    # The upstream name and the rest of the path exactly as sent: client-chosen
    # until the outbound check has read them.
    upstream: str
    path: str
    query: str
    started: float
    phase: Phase
    flavor: Flavor
    route: Route | None
    team: TeamMatch | None
    policy_version: str | None
    # The guard's decision, or a refusal of the gateway's own (team, upgrade).
    verdict: Decision | None
    # Why the request was unusable (400-415) or failed inside the gateway.
    error: str | None
    status: int | None
    outcome: str | None
    upstream_status: int | None
    upstream_ms: float | None
    # The review holding this request, or the one whose decision let it pass.
    review_id: str | None
    held_ms: float | None
    # The guardian's judgement of each tool call in the answer, as audited.
    tool_calls: list[dict[str, object]]
    # What `outbound.on_secret: redact` replaced before the request went upstream.
    redacted: list[Evidence]

    def __init__(self, request_id: str, method: str, upstream: str, path: str, query: str) -> None:
        self.request_id = request_id
        self.method = method
        self.upstream = upstream
        self.path = path
        self.query = query
        self.started = time.perf_counter()
        self.phase = Phase.RECEIVED
        self.flavor = "openai"
        self.route = None
        self.team = None
        self.policy_version = None
        self.verdict = None
        self.error = None
        self.status = None
        self.outcome = None
        self.upstream_status = None
        self.upstream_ms = None
        self.review_id = None
        self.held_ms = None
        self.tool_calls = []
        self.redacted = []

    def advance(self, phase: Phase) -> None:
        # Never back: a held streamed request has answered its client before
        # it is forwarded.
        self.phase = max(self.phase, phase)

    @property
    def decision(self) -> str:
        if self.verdict is not None:
            return self.verdict.action
        return "error" if self.error is not None else "none"

    @property
    def category(self) -> str:
        if self.verdict is not None:
            return self.verdict.category
        return self.error or "none"

    def audit_record(self) -> dict[str, object]:
        """The audit entry's payload: decisions, kinds, fingerprints, never a raw value."""
        record: dict[str, object] = {
            "request_id": self.request_id,
            "method": self.method if self.method in METHODS else shown(self.method),
            "upstream": self._shown_upstream(),
            "path": self._shown_path(),
            "team": self.team.name if self.team is not None else None,
            "decision": self.decision,
            "category": self.category,
        }
        if self.policy_version is not None:
            record["policy_version"] = self.policy_version
        if self.verdict is not None and self.verdict.action != "allow":
            record["findings"] = [
                {"kind": e.kind, "fingerprint": e.fingerprint, "where": e.where}
                for e in self.verdict.evidence
            ]
        if self.redacted:
            record["redacted"] = [
                {"kind": e.kind, "fingerprint": e.fingerprint, "where": e.where}
                for e in self.redacted
            ]
        if self.verdict is not None and self.verdict.allowed:
            record["allowed"] = [
                {"kind": a.kind, "fingerprint": a.fingerprint, "where": a.where, "rule": a.rule}
                for a in self.verdict.allowed
            ]
        for key, value in (
            ("status", self.status),
            ("outcome", self.outcome),
            ("upstream_status", self.upstream_status),
            ("upstream_ms", self.upstream_ms),
            ("review_id", self.review_id),
            ("held_ms", self.held_ms),
        ):
            if value is not None:
                record[key] = value
        if self.tool_calls:
            record["tool_calls"] = self.tool_calls
        if self.phase is Phase.STREAMING:
            record["stream"] = True
        record["latency_ms"] = ms(time.perf_counter() - self.started)
        return record

    def _shown_path(self) -> str:
        if self.phase < Phase.CHECKED:
            # Refused before the outbound check read it: it may hold a secret.
            return shown(self.path)
        if self.verdict is not None and any(
            e.where.startswith("path") for e in self.verdict.evidence
        ):
            return REDACTED
        return self.path

    def _shown_upstream(self) -> str:
        if self.route is not None:
            return self.route.name
        return shown(self.upstream)
