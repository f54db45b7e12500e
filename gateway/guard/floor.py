"""The deterministic floor: every concrete secret in a text, as (kind, value) pairs.

The pipeline fingerprints the values at once and keeps only the fingerprints.
"""

from __future__ import annotations

from urllib.parse import unquote

from gateway.guard.detectors import secrets


def find(text: str) -> list[tuple[str, str]]:
    """(kind, value) for each secret in ``text``."""
    return [(f.kind, text[f.start : f.end]) for f in secrets.scan(text)]


def holds_secret(text: str) -> bool:
    """Whether a client-chosen string must not be echoed: a secret, as sent or
    percent-decoded, or a text the scan could not read."""
    try:
        return bool(secrets.scan(text)) or ("%" in text and bool(secrets.scan(unquote(text))))
    except Exception:
        return True
