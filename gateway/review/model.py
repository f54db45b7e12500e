"""A review: what the guard held, bound to exactly what was asked, and what a human decided.

An approval applies to one `approval digest` (see :func:`approval_digest`):
the same sender, destination, direction, payload and policy version. A changed
body or a changed policy (operator rules are part of it) is another digest,
for which no decision exists yet: approvals fail closed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Literal

from gateway.canonical import digest

Status = Literal["pending", "approved", "denied"]
STATUSES: tuple[Status, ...] = ("pending", "approved", "denied")


def approval_digest(
    *,
    source: str,
    destination: str,
    direction: str,
    body: object,
    policy_version: str,
    proposal_id: str | None = None,
) -> str:
    """``sha256hex(canonical({id?, from, to, direction, bodyHash, policyVersion}))``, as Reef.

    ``bodyHash = sha256hex(canonical(body))``. LLM traffic has no proposal id;
    the reference then leaves the member out.
    """
    preimage: dict[str, object] = {
        "from": source,
        "to": destination,
        "direction": direction,
        "bodyHash": digest(body),
        "policyVersion": policy_version,
    }
    if proposal_id is not None:
        preimage["id"] = proposal_id
    return digest(preimage)


def new_review_id() -> str:
    # 128 random bits: an id is also what a ticket hands the agent, so it must
    # not be guessable from another.
    return "rv_" + os.urandom(16).hex()


@dataclass(frozen=True, slots=True)
class Finding:
    """What made the guard hold the request, as it may be shown: kind, fingerprint, place."""

    kind: str
    fingerprint: str
    where: str


@dataclass(frozen=True, slots=True)
class Review:
    id: str
    team: str
    digest: str
    direction: str
    source: str
    destination: str
    category: str
    reason: str
    policy_version: str
    # A short excerpt of the text that triggered review, with every secret the
    # floor can find replaced; never the raw text.
    excerpt: str
    findings: tuple[Finding, ...]
    status: Status
    created: float  # Unix seconds
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "team": self.team,
            "digest": self.digest,
            "direction": self.direction,
            "source": self.source,
            "destination": self.destination,
            "category": self.category,
            "reason": self.reason,
            "policy_version": self.policy_version,
            "excerpt": self.excerpt,
            "findings": [
                {"kind": f.kind, "fingerprint": f.fingerprint, "where": f.where}
                for f in self.findings
            ],
            "status": self.status,
            "created": self.created,
            "decided_by": self.decided_by,
            "decided_at": self.decided_at,
            "note": self.note,
        }


def pending(
    *,
    team: str,
    digest: str,
    direction: str,
    source: str,
    destination: str,
    category: str,
    reason: str,
    policy_version: str,
    excerpt: str,
    findings: tuple[Finding, ...] = (),
) -> Review:
    """A new pending review with a fresh id."""
    return Review(
        id=new_review_id(),
        team=team,
        digest=digest,
        direction=direction,
        source=source,
        destination=destination,
        category=category,
        reason=reason,
        policy_version=policy_version,
        excerpt=excerpt,
        findings=findings,
        status="pending",
        created=time.time(),
    )
