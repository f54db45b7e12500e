"""Phrase rules by family; each rule has a name such as "override.ignore_the_above"."""

from __future__ import annotations

from typing import Final

from gateway.guard.detectors.injection.rules import (
    authority,
    exfiltration,
    extraction,
    multilingual,
    obfuscation,
    override,
    persona,
    planted,
)
from gateway.guard.detectors.injection.rules.base import Phrase

# Families in the order their rules are tried; a group's rules stay together.
PHRASES: Final[tuple[Phrase, ...]] = (
    *override.RULES,
    *persona.RULES,
    *extraction.RULES,
    *exfiltration.RULES,
    *authority.RULES,
    *planted.RULES,
    *multilingual.RULES,
    *obfuscation.RULES,
)
NAMES: Final = frozenset(p.name for p in PHRASES)
assert len(NAMES) == len(PHRASES), "phrase rule names must be unique"
