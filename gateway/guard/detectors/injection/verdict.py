"""The detector's verdict, and what a rule hit carries into it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Decision = Literal["allow", "review", "deny"]


@dataclass(frozen=True, slots=True)
class InjectionAssessment:
    decision: Decision
    category: str  # "prompt_injection" when flagged, "none" when allowed
    reason: str  # short; quotes at most _QUOTE_MAX characters of the text
    signals: tuple[str, ...]


CATEGORY: Final = "prompt_injection"
_ALLOW: Final = InjectionAssessment("allow", "none", "no injection indicators", ())

# A cue is evidence that does not flag a text alone: it counts only next to
# another signal (planted actions such as "send the money" are also what
# users ask for every day).
CUE: Final = 0
REVIEW: Final = 1
DENY: Final = 2

# Quoting the match helps a reviewer; quoting more would copy the payload into logs.
QUOTE_MAX: Final = 32


@dataclass(frozen=True, slots=True)
class Hit:
    signal: str
    level: int
    label: str
    quote: str


def quote(text: str) -> str:
    # Printable only, so a reason never smuggles control or invisible chars.
    clean = "".join(c if c.isprintable() else " " for c in text[: QUOTE_MAX * 2])
    clean = " ".join(clean.split())
    return clean if len(clean) <= QUOTE_MAX else clean[: QUOTE_MAX - 1] + "…"
