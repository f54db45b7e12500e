"""The deterministic floor: every concrete secret in a text, as (kind, value) pairs.

The secret scan runs on the text as sent and on what it says once unwrapped
(decoded from base64, hex and escapes, normalised from look-alike and invisible
characters: see `unwrap`); a value found in a derived text is the decoded
secret, so its fingerprint is that of the real value. The pipeline
fingerprints the values at once and keeps only the fingerprints.
"""

from __future__ import annotations

from gateway.guard.detectors import secrets, unwrap


def find(text: str) -> list[tuple[str, str]]:
    """(kind, value) for each secret in ``text`` or in a wrapping of it.

    Raises `unwrap.UnwrapLimit` for a text wrapped beyond the decoding bounds.
    """
    return unwrap.find(text, secrets.scan)


def holds_secret(text: str) -> bool:
    """Whether ``text`` may not be echoed: it holds a secret, or it could not be checked.

    For a client-chosen string that would go into an error message or the
    audit log without having passed the outbound check.
    """
    try:
        return bool(find(text))
    except Exception:
        return True


REDACTED = "[redacted]"


def shown(text: str) -> str:
    """``text`` as it may be echoed: itself, or a placeholder when it may not be."""
    return REDACTED if holds_secret(text) else text
