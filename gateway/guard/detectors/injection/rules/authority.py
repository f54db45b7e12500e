"""Claimed authority over the reader."""

from __future__ import annotations

from typing import Final

from gateway.guard.detectors.injection.rules.base import Phrase
from gateway.guard.detectors.injection.verdict import REVIEW as _REVIEW

RULES: Final[tuple[Phrase, ...]] = (
    # Claimed authority over the reader.
    Phrase(
        "authority.claimed_developer",
        "impersonate",
        "role_impersonation",
        _REVIEW,
        "claimed authority",
        "i message instructions instruction note update this",
        "developer developers creator administrator admin owner programmer maker operator"
        " exception engineer employee researcher system openai anthropic",
        r"\bi(?:'m|\W+am)\W+(?:your|the)\W+(?:developer|creator|administrator|admin|owner|programmer"
        r"|maker|operator|system\W+administrator)\b"
        r"|\b(?:message|instructions?|note|update)\W+from\W+(?:the\W+)?(?:system|developers?|openai"
        r"|anthropic|administrator|admin)\W*:"
        r"|\bthis\W+(?:chat|conversation|session)\W+is\W+an\W+exception\W+to\b"
        r"|\bi(?:'m|\W+am)\W+(?:a|an|the)\W+(?:\w+\W+)?(?:developer|programmer|engineer|employee"
        r"|researcher)\W+(?:at|from|for|of)\W+(?:openai|anthropic|google\W+deepmind"
        r"|the\W+company\W+that\W+(?:made|built|trained|created)\W+you)\b",
    ),
)
