"""The byte and number encodings of the Reef wire format, decoded strictly.

Strict means one spelling per value: a decoder that tolerated missing padding,
stray characters or non-zero unused bits would accept several encodings of
one signature, and signed values, replay keys and hashes are compared as
strings. Every decoder here re-encodes what it decoded and compares.
"""

from __future__ import annotations

import base64
import binascii
import re

# The guard measures strings as the reference does; one definition for both.
from gateway.guard.verdict import js_length

__all__ = [
    "MAX_SAFE_INTEGER",
    "b64_decode",
    "b64_encode",
    "b64url_decode",
    "b64url_encode",
    "is_lower_hex64",
    "is_ulid",
    "js_int",
    "js_length",
]

# Number.MAX_SAFE_INTEGER: the reference's integers are doubles.
MAX_SAFE_INTEGER = 2**53 - 1

_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
# Crockford base32, uppercase, without I L O U; the first character 0-7 keeps
# the 48-bit timestamp within 2**48.
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def b64_encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64_decode(text: str) -> bytes | None:
    """Standard base64 with padding, or None unless ``text`` is its canonical spelling."""
    if not isinstance(text, str) or len(text) % 4 or _B64.fullmatch(text) is None:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        return None
    return raw if b64_encode(raw) == text else None


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes | None:
    """base64url without padding, or None unless ``text`` is its canonical spelling."""
    if not isinstance(text, str) or len(text) % 4 == 1 or _B64URL.fullmatch(text) is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error:
        return None
    return raw if b64url_encode(raw) == text else None


def js_int(value: object) -> int | None:
    """``value`` as an integer when JavaScript would see an integer (``Number.isInteger``).

    JSON text cannot tell ``1`` from ``1.0`` in JavaScript, so an integral float
    counts; a bool does not.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def is_ulid(value: object) -> bool:
    return isinstance(value, str) and _ULID.fullmatch(value) is not None


def is_lower_hex64(value: object) -> bool:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None
