"""Claw identities: keys, ``handle#epoch`` names, fingerprints and key rotation.

A claw holds an Ed25519 key (signatures) and an X25519 key (it receives
envelopes sealed to it). Keys travel as base64url without padding; a secret
key is the 32 bytes drawn, an Ed25519 secret being its seed.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from gateway.canonical import canonical_bytes
from gateway.peer.encoding import MAX_SAFE_INTEGER, b64url_decode, b64url_encode, js_int
from gateway.peer.errors import InvalidInput, MalformedError

__all__ = [
    "Identity",
    "Peer",
    "PublicIdentity",
    "ed25519_private",
    "ed25519_public",
    "fingerprint",
    "format_handle_epoch",
    "generate_identity",
    "parse_handle_epoch",
    "raw_public",
    "rotation_message",
    "sign_rotation",
    "verify_rotation",
    "x25519_private",
    "x25519_public",
]

Rng = Callable[[int], bytes]

# The handle: 1-63 of [A-Za-z0-9_-], starting alphanumeric; the epoch: a
# decimal without a leading zero. fullmatch, because the reference's `$` is
# end of input only (Python's `$` would also match before a final newline).
_HANDLE = r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}"
_HANDLE_RE = re.compile(_HANDLE)
_PEER_RE = re.compile(rf"({_HANDLE})#([1-9][0-9]*)")
# Longer digit strings are beyond MAX_SAFE_INTEGER anyway; int() of a huge one
# would only burn time (or hit Python's digit limit).
_MAX_EPOCH_DIGITS = len(str(MAX_SAFE_INTEGER))

ROTATION_DOMAIN = "reef-rotation-v1"
_ROTATION_KEYS = frozenset({"newEd25519Pub", "newX25519Pub", "newEpoch", "signature"})


@dataclass(frozen=True, slots=True)
class Peer:
    handle: str
    epoch: int

    def __str__(self) -> str:
        return f"{self.handle}#{self.epoch}"

    def same_claw(self, other: Peer) -> bool:
        """Handles match case-insensitively; the epoch must be equal."""
        return self.handle.lower() == other.handle.lower() and self.epoch == other.epoch


def parse_handle_epoch(text: object) -> Peer:
    match = _PEER_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidInput("invalid handle#key_epoch")
    digits = match.group(2)
    epoch = int(digits) if len(digits) <= _MAX_EPOCH_DIGITS else MAX_SAFE_INTEGER + 1
    if epoch > MAX_SAFE_INTEGER:
        raise InvalidInput("invalid key epoch")
    return Peer(match.group(1), epoch)


def format_handle_epoch(handle: object, epoch: object) -> str:
    number = js_int(epoch)
    if (
        not isinstance(handle, str)
        or _HANDLE_RE.fullmatch(handle) is None
        or number is None
        or not 1 <= number <= MAX_SAFE_INTEGER
    ):
        raise InvalidInput("invalid handle or key epoch")
    return f"{handle}#{number}"


def is_handle(text: object) -> bool:
    return isinstance(text, str) and _HANDLE_RE.fullmatch(text) is not None


# ---------------------------------------------------------------------------
# Keys


def _raw32(value: bytes | str) -> bytes:
    raw = b64url_decode(value) if isinstance(value, str) else value
    if raw is None or len(raw) != 32:
        raise MalformedError("invalid key length")
    return raw


def ed25519_private(value: bytes | str) -> Ed25519PrivateKey:
    """From the 32-byte seed, raw or base64url."""
    return Ed25519PrivateKey.from_private_bytes(_raw32(value))


def ed25519_public(value: bytes | str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(_raw32(value))


def x25519_private(value: bytes | str) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(_raw32(value))


def x25519_public(value: bytes | str) -> X25519PublicKey:
    return X25519PublicKey.from_public_bytes(_raw32(value))


def raw_public(key: Ed25519PublicKey | X25519PublicKey) -> bytes:
    return key.public_bytes_raw()


def verify_ed25519(key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    try:
        key.verify(signature, message)
    except InvalidSignature:
        return False
    return True


# ---------------------------------------------------------------------------
# Identities


def fingerprint(ed25519: bytes, x25519: bytes | None = None) -> str:
    """SHA-256 in lowercase hex, in groups of 4 separated by spaces.

    With the Ed25519 key alone, of its raw bytes; with both keys, of canonical
    ``{"ed25519": b64url, "x25519": b64url}``, so the encryption key is vouched
    for as well.
    """
    if x25519 is None:
        data = ed25519
    else:
        data = canonical_bytes({"ed25519": b64url_encode(ed25519), "x25519": b64url_encode(x25519)})
    digest = hashlib.sha256(data).hexdigest()
    return " ".join(digest[i : i + 4] for i in range(0, len(digest), 4))


@dataclass(frozen=True, slots=True)
class PublicIdentity:
    peer: Peer
    ed25519: bytes
    x25519: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.ed25519, self.x25519)

    def to_dict(self) -> dict[str, str]:
        return {
            "peer": str(self.peer),
            "ed25519": b64url_encode(self.ed25519),
            "x25519": b64url_encode(self.x25519),
        }


@dataclass(frozen=True, slots=True)
class Identity:
    """A claw's own identity, secrets included: what the gateway holds in custody."""

    peer: Peer
    signing_key: Ed25519PrivateKey
    encryption_key: X25519PrivateKey

    @property
    def public(self) -> PublicIdentity:
        return PublicIdentity(
            self.peer,
            self.signing_key.public_key().public_bytes_raw(),
            self.encryption_key.public_key().public_bytes_raw(),
        )

    def secrets(self) -> dict[str, str]:
        """The secret keys, base64url, for a key file (never for a log)."""
        return {
            "ed25519": b64url_encode(self.signing_key.private_bytes_raw()),
            "x25519": b64url_encode(self.encryption_key.private_bytes_raw()),
        }

    @classmethod
    def from_secrets(cls, peer: str, secrets: Mapping[str, str]) -> Identity:
        return cls(
            parse_handle_epoch(peer),
            ed25519_private(secrets["ed25519"]),
            x25519_private(secrets["x25519"]),
        )


def generate_identity(handle: str, epoch: int = 1, *, rng: Rng = os.urandom) -> Identity:
    """A new identity; the Ed25519 seed is drawn first, then the X25519 secret."""
    peer = parse_handle_epoch(format_handle_epoch(handle, epoch))
    seed = rng(32)
    secret = rng(32)
    return Identity(peer, ed25519_private(seed), x25519_private(secret))


# ---------------------------------------------------------------------------
# Rotation: the old key vouches for the new keys and epoch.


def rotation_message(new_ed25519: str, new_x25519: str, new_epoch: int) -> bytes:
    return canonical_bytes(
        {
            "domain": ROTATION_DOMAIN,
            "newEd25519Pub": new_ed25519,
            "newX25519Pub": new_x25519,
            "newEpoch": new_epoch,
        }
    )


def sign_rotation(
    old_key: Ed25519PrivateKey, new_ed25519: bytes, new_x25519: bytes, new_epoch: int
) -> dict[str, object]:
    epoch = js_int(new_epoch)
    if epoch is None or not 1 <= epoch <= MAX_SAFE_INTEGER:
        raise InvalidInput("invalid new epoch")
    ed = b64url_encode(_raw32(new_ed25519))
    x = b64url_encode(_raw32(new_x25519))
    signature = old_key.sign(rotation_message(ed, x, epoch))
    return {
        "newEd25519Pub": ed,
        "newX25519Pub": x,
        "newEpoch": epoch,
        "signature": b64url_encode(signature),
    }


def verify_rotation(statement: object, old_key: Ed25519PublicKey) -> bool:
    """Whether ``statement`` is exactly a rotation signed by ``old_key``; never raises."""
    if not isinstance(statement, dict) or statement.keys() != _ROTATION_KEYS:
        return False
    ed, x, epoch = statement["newEd25519Pub"], statement["newX25519Pub"], statement["newEpoch"]
    number = js_int(epoch)
    if number is None or not 1 <= number <= MAX_SAFE_INTEGER:
        return False
    keys = (
        [b64url_decode(ed), b64url_decode(x)] if isinstance(ed, str) and isinstance(x, str) else []
    )
    if len(keys) != 2 or any(k is None or len(k) != 32 for k in keys):
        return False
    signature = b64url_decode(statement["signature"])
    if signature is None or len(signature) != 64:
        return False
    return verify_ed25519(old_key, signature, rotation_message(ed, x, number))
