"""The deterministic floor: every concrete secret in a text, as (kind, value) pairs.

The pipeline fingerprints the values at once and keeps only the fingerprints.
"""

from __future__ import annotations

from gateway.guard.detectors import secrets


def find(text: str) -> list[tuple[str, str]]:
    """(kind, value) for each secret in ``text``."""
    return [(f.kind, text[f.start : f.end]) for f in secrets.scan(text)]
