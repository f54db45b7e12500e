"""The record of a phrase rule."""

from __future__ import annotations

from typing import NamedTuple


class Phrase(NamedTuple):
    """One phrase rule, as written.

    Within a group the first hit wins, so strong variants come first. Every
    top-level alternative of `pattern` begins with one of `starts` (a match
    is tried only where one of them begins a word), and a match contains one
    of `gate` (the rule is skipped when none occurs; empty: `starts`).
    """

    name: str  # "<family>.<what it catches>": how a reader finds the rule
    group: str
    signal: str
    level: int
    label: str
    starts: str  # space-separated words
    gate: str  # space-separated words
    pattern: str
