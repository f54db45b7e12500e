"""Envelope v1: a message sealed to one recipient and signed by its sender.

    {v: 1, id, from, to, ts, epk, n, ct, sig}

* ``epk``: an ephemeral X25519 public key; ``key = HKDF-SHA256(X25519(eph,
  recipient), salt none, info "reef-v1", 32 bytes)``.
* ``ct``: AES-256-GCM under ``key`` with nonce ``n`` (no AAD) of the canonical
  JSON of the body ``{text, replyTo?, thread?}``, tag appended.
* ``sig``: Ed25519 of the sender over the canonical JSON of the envelope
  without ``sig``; ``epk``, ``n``, ``ct`` and ``sig`` are standard base64.

`open_envelope` checks in the reference's order, so a hostile envelope gets
the same answer here as from the reference: cheap structural checks first,
the signature before anything the sender chose is interpreted, the replay
claim before decryption, and the claim released again if a later check fails.
Sans-IO: the clock, the replay store and the randomness are arguments.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from gateway.canonical import CanonicalError, canonical_bytes, digest
from gateway.peer.encoding import (
    MAX_SAFE_INTEGER,
    b64_decode,
    b64_encode,
    is_ulid,
    js_int,
    js_length,
)
from gateway.peer.errors import (
    BadSignatureError,
    ExpiredError,
    InvalidInput,
    MalformedError,
    NotPinnedError,
    ReplayedError,
    TooLargeError,
    WrongRecipientError,
)
from gateway.peer.identity import Peer, parse_handle_epoch, verify_ed25519
from gateway.peer.replay import Binding, ReplayStore, ReplayStoreError

__all__ = [
    "MAX_AGE_S",
    "MAX_FUTURE_SKEW_S",
    "MAX_PLAINTEXT_BYTES",
    "Opened",
    "encrypt",
    "envelope_hash",
    "open_envelope",
    "seal",
    "sign_envelope",
    "signing_bytes",
    "validate_body",
]

Rng = Callable[[int], bytes]
PinnedKey = Callable[[str], Ed25519PublicKey | None]

VERSION = 1
HKDF_INFO = b"reef-v1"
MAX_AGE_S = 30 * 24 * 3600
MAX_FUTURE_SKEW_S = 300
MAX_PLAINTEXT_BYTES = 32_768
MAX_CANONICAL_BYTES = 48 * 1024
# Field lengths in characters, checked before anything is decoded. 44752 is
# the reference's bound for ct (it leaves room above a full 32 KiB plaintext).
_MAX_CHARS = {"from": 80, "to": 80, "epk": 46, "n": 18, "sig": 90, "ct": 44_752}
_SIZES = {"epk": 32, "n": 12, "sig": 64}
_KEYS = frozenset({"v", "id", "from", "to", "ts", "epk", "n", "ct", "sig"})
_STRINGS = ("id", "from", "to", "epk", "n", "ct", "sig")
_BODY_KEYS = frozenset({"text", "replyTo", "thread"})
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class Opened:
    id: str
    sender: Peer
    recipient: Peer
    ts: int
    body: dict[str, str]
    envelope_hash: str

    @property
    def body_hash(self) -> str:
        return digest(self.body)


# ---------------------------------------------------------------------------
# Sealing


def validate_body(body: object) -> dict[str, str]:
    """``{text, replyTo?, thread?}``: text a well-formed string, the others ULIDs."""
    if not isinstance(body, Mapping) or "text" not in body or not body.keys() <= _BODY_KEYS:
        raise MalformedError("invalid body")
    if not all(isinstance(value, str) for value in body.values()):
        raise MalformedError("invalid body")
    checked: dict[str, str] = dict(body)
    if not all(is_ulid(checked[key]) for key in ("replyTo", "thread") if key in checked):
        raise MalformedError("invalid body identifier")
    try:
        checked["text"].encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate: no UTF-8 form, so no canonical bytes to sign.
        raise MalformedError("invalid UTF-8 body") from None
    return checked


def _check_metadata(envelope_id: object, ts: object) -> int:
    number = js_int(ts)
    if not is_ulid(envelope_id) or number is None or not 0 <= number <= MAX_SAFE_INTEGER:
        raise MalformedError("invalid envelope metadata")
    return number


def _check_peers(sender: object, recipient: object) -> tuple[Peer, Peer]:
    try:
        return parse_handle_epoch(sender), parse_handle_epoch(recipient)
    except InvalidInput:
        raise MalformedError("invalid envelope peer") from None


def _aead_key(secret: X25519PrivateKey, public: X25519PublicKey) -> bytes:
    # exchange() refuses a low-order public key (all-zero shared secret).
    shared = secret.exchange(public)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=HKDF_INFO).derive(shared)


def encrypt(
    plaintext: bytes, recipient_key: X25519PublicKey, *, rng: Rng = os.urandom
) -> dict[str, str]:
    """``{epk, n, ct}`` for ``plaintext``: draws the ephemeral secret (32 bytes), then the nonce."""
    ephemeral = X25519PrivateKey.from_private_bytes(rng(32))
    nonce = rng(12)
    ct = AESGCM(_aead_key(ephemeral, recipient_key)).encrypt(nonce, plaintext, None)
    return {
        "epk": b64_encode(ephemeral.public_key().public_bytes_raw()),
        "n": b64_encode(nonce),
        "ct": b64_encode(ct),
    }


def signing_bytes(envelope: Mapping[str, object]) -> bytes:
    return canonical_bytes({k: v for k, v in envelope.items() if k != "sig"})


def sign_envelope(
    unsigned: Mapping[str, object], signing_key: Ed25519PrivateKey
) -> dict[str, object]:
    envelope = {k: v for k, v in unsigned.items() if k != "sig"}
    envelope["sig"] = b64_encode(signing_key.sign(signing_bytes(envelope)))
    return envelope


def envelope_hash(envelope: Mapping[str, object]) -> str:
    """SHA-256 of the canonical whole envelope: what a replay id is bound to."""
    return digest(envelope)


def seal(
    *,
    id: str,
    sender: str,
    recipient: str,
    ts: int,
    body: Mapping[str, object],
    signing_key: Ed25519PrivateKey,
    recipient_key: X25519PublicKey,
    rng: Rng = os.urandom,
) -> dict[str, object]:
    number = _check_metadata(id, ts)
    _check_peers(sender, recipient)
    plaintext = canonical_bytes(validate_body(body))
    if len(plaintext) > MAX_PLAINTEXT_BYTES:
        raise TooLargeError()
    unsigned: dict[str, object] = {"v": VERSION, "id": id, "from": sender, "to": recipient}
    unsigned["ts"] = number
    unsigned.update(encrypt(plaintext, recipient_key, rng=rng))
    return sign_envelope(unsigned, signing_key)


# ---------------------------------------------------------------------------
# Opening


def _check_shape(envelope: object) -> dict[str, object]:
    if not isinstance(envelope, dict) or envelope.keys() != _KEYS:
        raise MalformedError()
    v = envelope["v"]
    if isinstance(v, bool) or not isinstance(v, int | float) or js_int(envelope["ts"]) is None:
        raise MalformedError()
    if not all(isinstance(envelope[key], str) for key in _STRINGS):
        raise MalformedError()
    if js_length(envelope["id"]) != 26:
        raise MalformedError("invalid envelope id length")
    return envelope


def _decode_binary(envelope: Mapping[str, object]) -> dict[str, bytes]:
    decoded: dict[str, bytes] = {}
    for key in ("epk", "n", "ct", "sig"):
        value = envelope[key]
        raw = b64_decode(value) if isinstance(value, str) else None
        if raw is None or len(raw) != _SIZES.get(key, len(raw)):
            raise MalformedError()
        decoded[key] = raw
    return decoded


def _decrypt(secret: X25519PrivateKey, binary: Mapping[str, bytes]) -> bytes:
    try:
        key = _aead_key(secret, X25519PublicKey.from_public_bytes(binary["epk"]))
        return AESGCM(key).decrypt(binary["n"], binary["ct"], None)
    except (InvalidTag, ValueError):
        raise MalformedError() from None


def _parse_body(plaintext: bytes) -> dict[str, str]:
    try:
        text = plaintext.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedError("invalid UTF-8 body") from None
    # As TextDecoder: one leading BOM is dropped. Otherwise the plaintext need
    # not be canonical (whitespace, and duplicate keys where the last wins).
    text = text.removeprefix(_BOM)
    try:
        value = json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError):
        raise MalformedError() from None
    return validate_body(value)


def _not_json(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def open_envelope(
    envelope: object,
    *,
    recipient: str,
    recipient_key: X25519PrivateKey,
    pinned_key: PinnedKey,
    replay: ReplayStore,
    now: float,
    max_age: int = MAX_AGE_S,
    max_future_skew: int = MAX_FUTURE_SKEW_S,
) -> Opened:
    """Verify, claim and decrypt one envelope addressed to ``recipient`` (``handle#epoch``).

    ``pinned_key(from)`` is the sender's pinned Ed25519 key, or None when the
    sender is not pinned; it is asked before ``from`` is parsed (the pin comes
    before the peer syntax in the reference's order), with at most 80 characters.

    Raises an `EnvelopeError` with the reference's code and message. A store
    that must not block the event loop is called from a worker thread:
    ``await asyncio.to_thread(open_envelope, ...)``.
    """
    env = _check_shape(envelope)
    sender_text, recipient_text = str(env["from"]), str(env["to"])
    for name, limit in _MAX_CHARS.items():
        if js_length(str(env[name])) > limit:
            raise TooLargeError()
    binary = _decode_binary(env)
    try:
        size = len(canonical_bytes(env))
    except CanonicalError:
        raise MalformedError() from None
    if size > MAX_CANONICAL_BYTES:
        raise TooLargeError()

    sender_key = pinned_key(sender_text)
    if sender_key is None:
        raise NotPinnedError()
    if not verify_ed25519(sender_key, binary["sig"], signing_bytes(env)):
        raise BadSignatureError()

    if env["v"] != VERSION:
        raise MalformedError()
    ts = _check_metadata(env["id"], env["ts"])
    sender, to = _check_peers(sender_text, recipient_text)
    if recipient_text != recipient:
        raise WrongRecipientError()

    envelope_id = str(env["id"])
    bound = envelope_hash(env)
    # Replays are per sender: handles are case-insensitive, and an epoch
    # change (rotation) does not reset the ids a claw has used.
    replay_key = sender.handle.lower()
    claim = replay.claim(replay_key, envelope_id, bound)
    if claim is Binding.MISMATCH:
        raise ReplayedError("replay id binding mismatch")
    if claim is not Binding.NEW:
        raise ReplayedError("duplicate envelope")
    try:
        if not now - max_age <= ts <= now + max_future_skew:
            raise ExpiredError()
        plaintext = _decrypt(recipient_key, binary)
        if len(plaintext) > MAX_PLAINTEXT_BYTES:
            raise TooLargeError()
        body = _parse_body(plaintext)
        replay.commit(replay_key, envelope_id, bound)
    except BaseException:
        # An envelope not accepted binds nothing: the same envelope may come
        # again once it can be opened (for example when its time has come).
        # Should the release fail too, the claim lapses with its lease; the
        # refusal is what the caller needs to hear.
        with contextlib.suppress(ReplayStoreError):
            replay.release(replay_key, envelope_id, bound)
        raise
    return Opened(envelope_id, sender, to, ts, body, bound)
