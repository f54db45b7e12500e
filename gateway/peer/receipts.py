"""Signed receipts: the recipient's statement of what it did with an envelope.

    {id, bodyHash, auditHead, status: accepted|rejected, category?, signature}

``auditHead`` is the recipient's audit chain head after recording the
envelope, so a receipt also anchors that chain. The signature (standard
base64, 88 characters) is Ed25519 over the canonical JSON of the receipt
without ``signature``.
"""

from __future__ import annotations

from collections.abc import Mapping

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gateway.canonical import canonical_bytes
from gateway.peer.encoding import b64_decode, b64_encode, is_lower_hex64, is_ulid, js_length
from gateway.peer.errors import InvalidInput
from gateway.peer.identity import verify_ed25519

__all__ = ["STATUSES", "sign_receipt", "verify_receipt"]

STATUSES = frozenset({"accepted", "rejected"})
_REQUIRED = frozenset({"id", "bodyHash", "auditHead", "status"})
_OPTIONAL = frozenset({"category"})
_SIGNATURE_CHARS = 88
_MAX_CATEGORY = 64


def _valid_body(body: object) -> bool:
    if not isinstance(body, Mapping) or not _REQUIRED <= body.keys() <= _REQUIRED | _OPTIONAL:
        return False
    category = body.get("category", "x")
    return (
        is_ulid(body["id"])
        and is_lower_hex64(body["bodyHash"])
        and is_lower_hex64(body["auditHead"])
        and body["status"] in STATUSES
        and isinstance(category, str)
        and 1 <= js_length(category) <= _MAX_CATEGORY
    )


def sign_receipt(body: Mapping[str, object], key: Ed25519PrivateKey) -> dict[str, object]:
    """The receipt for ``body`` (without a signature); InvalidInput for a malformed body."""
    if not _valid_body(body):
        raise InvalidInput("invalid receipt")
    receipt = dict(body)
    receipt["signature"] = b64_encode(key.sign(canonical_bytes(receipt)))
    return receipt


def verify_receipt(receipt: object, key: Ed25519PublicKey) -> bool:
    """Whether ``receipt`` is well formed and signed by ``key``; never raises."""
    if not isinstance(receipt, Mapping) or "signature" not in receipt:
        return False
    body = {k: v for k, v in receipt.items() if k != "signature"}
    signature = receipt["signature"]
    if not _valid_body(body) or not isinstance(signature, str):
        return False
    raw = b64_decode(signature) if len(signature) == _SIGNATURE_CHARS else None
    if raw is None or len(raw) != 64:
        return False
    return verify_ed25519(key, raw, canonical_bytes(body))
