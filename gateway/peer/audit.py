"""Reef's audit-chain extras: encrypted text fields and signed checkpoints.

The chain itself (entry hashes, verification, the JSONL file) is
`gateway.observe.audit`. What Reef adds on top:

* every string under a key named exactly ``text`` or ``reason``, at any depth,
  is stored as ``{"enc": base64(nonce ‖ AES-256-GCM ciphertext ‖ tag)}``
  before the entry is hashed, so a chain can be verified and exported
  without revealing what was said;
* a checkpoint ``{head, signature}`` signs ``reef-checkpoint-v1:<head>`` with
  the claw's Ed25519 key, anchoring a head outside the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from gateway.peer.encoding import (
    b64_decode,
    b64_encode,
    b64url_decode,
    b64url_encode,
    is_lower_hex64,
)
from gateway.peer.errors import AuditCryptoError
from gateway.peer.identity import verify_ed25519

__all__ = [
    "ENCRYPTED_KEYS",
    "checkpoint_message",
    "decrypt_text",
    "encrypt_text",
    "open_fields",
    "seal_fields",
    "sign_checkpoint",
    "verify_checkpoint",
]

Rng = Callable[[int], bytes]

ENCRYPTED_KEYS = frozenset({"text", "reason"})
CHECKPOINT_DOMAIN = "reef-checkpoint-v1"
_NONCE = 12
_TAG = 16


def encrypt_text(text: str, key: bytes, *, rng: Rng = os.urandom) -> dict[str, str]:
    nonce = rng(_NONCE)
    sealed = AESGCM(key).encrypt(nonce, text.encode("utf-8"), None)
    return {"enc": b64_encode(nonce + sealed)}


def decrypt_text(field: object, key: bytes) -> str:
    raw = None
    if isinstance(field, Mapping) and field.keys() == {"enc"} and isinstance(field["enc"], str):
        raw = b64_decode(field["enc"])
    if raw is None or len(raw) < _NONCE + _TAG:
        raise AuditCryptoError("invalid encrypted audit field")
    try:
        plain = AESGCM(key).decrypt(raw[:_NONCE], raw[_NONCE:], None)
        return plain.decode("utf-8")
    except (InvalidTag, UnicodeDecodeError) as exc:
        raise AuditCryptoError("encrypted audit field does not decrypt with this key") from exc


def seal_fields(value: object, key: bytes, *, rng: Rng = os.urandom) -> object:
    """A copy of ``value`` with its text and reason strings encrypted, in document order."""
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for name, item in value.items():
            if name in ENCRYPTED_KEYS and isinstance(item, str):
                out[name] = encrypt_text(item, key, rng=rng)
            else:
                out[name] = seal_fields(item, key, rng=rng)
        return out
    if isinstance(value, list | tuple):
        return [seal_fields(item, key, rng=rng) for item in value]
    return value


def open_fields(value: object, key: bytes) -> object:
    """The inverse of `seal_fields`; AuditCryptoError when a field does not decrypt."""
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for name, item in value.items():
            if name in ENCRYPTED_KEYS and isinstance(item, Mapping) and item.keys() == {"enc"}:
                out[name] = decrypt_text(item, key)
            else:
                out[name] = open_fields(item, key)
        return out
    if isinstance(value, list | tuple):
        return [open_fields(item, key) for item in value]
    return value


def checkpoint_message(head: str) -> bytes:
    return f"{CHECKPOINT_DOMAIN}:{head}".encode()


def sign_checkpoint(head: str, key: Ed25519PrivateKey) -> dict[str, str]:
    """``head`` is an entryHash, or "" for an empty chain."""
    if head != "" and not is_lower_hex64(head):
        raise AuditCryptoError("invalid checkpoint head")
    return {"head": head, "signature": b64url_encode(key.sign(checkpoint_message(head)))}


def verify_checkpoint(checkpoint: object, key: Ed25519PublicKey) -> bool:
    if not isinstance(checkpoint, Mapping) or checkpoint.keys() != {"head", "signature"}:
        return False
    head, signature = checkpoint["head"], checkpoint["signature"]
    if not isinstance(head, str) or (head != "" and not is_lower_hex64(head)):
        return False
    raw = b64url_decode(signature) if isinstance(signature, str) else None
    if raw is None or len(raw) != 64:
        return False
    return verify_ed25519(key, raw, checkpoint_message(head))
