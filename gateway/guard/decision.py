"""The outcome of checking one request: what to do, why, and what was found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Action = Literal["allow", "review", "deny"]

_SEVERITY: Final[dict[str, int]] = {"allow": 0, "review": 1, "deny": 2}


def severity(action: Action) -> int:
    return _SEVERITY[action]


@dataclass(frozen=True, slots=True)
class Evidence:
    """A detector hit as it may be shown: kind, fingerprint and location only."""

    kind: str
    fingerprint: str
    where: str


@dataclass(frozen=True, slots=True)
class Allowance:
    """A finding a team's allowance let through, and the rule that did."""

    kind: str
    fingerprint: str
    where: str
    rule: str  # "allow.fingerprints", "allow.patterns[1]", "allow.credential_paths[0]"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    category: str
    reason: str
    evidence: tuple[Evidence, ...] = ()
    # For a review or a deny by a check past the floor: the start of the text
    # that raised it, every secret the floor finds in it replaced, for a reviewer.
    excerpt: str = ""
    # Findings let through by a team allowance, for the audit.
    allowed: tuple[Allowance, ...] = ()

    @property
    def kinds(self) -> list[str]:
        return sorted({e.kind for e in self.evidence})


ALLOW: Final = Decision("allow", "none", "no finding")
