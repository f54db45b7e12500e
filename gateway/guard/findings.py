"""What a deterministic detector reports: a kind and a fingerprint, never the value."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def fingerprint(value: str) -> str:
    """A short, stable identifier of a secret value for audit and review.

    Truncated so that it correlates findings without being a usable oracle for
    long secrets; the raw value is never stored anywhere.
    """
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # e.g. "openai_api_key", "aws_access_key", "private_key"
    start: int  # offsets in the scanned text, for redaction; never logged with the text
    end: int
    fingerprint: str
