"""What a deterministic detector reports, and how a found value is named without showing it.

A detector reports a kind and a span, never the value. Wherever a finding is
shown (audit, errors, the review page) the value appears only as a
fingerprint: a truncated HMAC-SHA256 under a per-deployment key. A plain hash
would let anyone holding the audit file test password guesses offline; with
the key kept apart from the log, a fingerprint only says "the same value as
in that other entry".
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Final

# Bytes of key material a deployment's fingerprint key must have at least.
MIN_KEY_BYTES: Final = 16


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # e.g. "openai_api_key", "aws_access_key", "private_key"
    start: int  # offsets in the scanned text, for redaction; never logged with the text
    end: int


class Fingerprinter:
    """``value -> hex(HMAC-SHA256(key, value))[:16]``: correlates findings, reveals nothing."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"a fingerprint key needs at least {MIN_KEY_BYTES} bytes")
        self._key = key

    def __call__(self, value: str) -> str:
        data = value.encode("utf-8", "surrogatepass")
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()[:16]
