"""envelopes.json: seal byte for byte, and open with the reference's answer for every envelope."""

from __future__ import annotations

import base64
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gateway.canonical import digest
from gateway.peer.conformance.harness import (
    Case,
    Mismatch,
    Relaxed,
    dig,
    equal,
    recorded_rng,
    unknown,
)
from gateway.peer.encoding import b64_decode
from gateway.peer.envelope import (
    encrypt,
    envelope_hash,
    open_envelope,
    seal,
    sign_envelope,
    signing_bytes,
)
from gateway.peer.errors import EnvelopeError
from gateway.peer.identity import (
    ed25519_private,
    ed25519_public,
    verify_ed25519,
    x25519_private,
    x25519_public,
)
from gateway.peer.replay import MemoryReplayStore, ReplayStore
from gateway.peer.replay_sqlite import SQLiteReplayStore

# seal_input.body.text_description, for texts too long to record: "'a' * 32758".
_REPEAT = re.compile(r"'(.)' \* ([0-9]{1,6})")


def check(case: Case) -> Relaxed | None:
    expect = case.get("expect")
    if expect == "seal_error":
        _seal_error(case)
    elif expect == "sequence":
        _sequence(case)
    elif expect in ("open_ok", "open_error"):
        envelope = dig(case, "envelope")
        _check_debug(case, envelope)
        _check_reproduction(case, envelope, case.get("seal_input"))
        got = _open(envelope, dig(case, "open_input"), MemoryReplayStore())
        equal("open", got, case["open_result"])
    else:
        raise unknown(case)
    return None


def _open(envelope: object, spec: Mapping[str, Any], store: ReplayStore) -> dict[str, object]:
    """open() with the case's inputs, its outcome in the vector's form."""
    pinned = spec["sender_ed25519_public_b64url"]
    sender_key = None if pinned is None else ed25519_public(pinned)
    limits = {}
    if "maxAgeSeconds" in spec:
        limits["max_age"] = spec["maxAgeSeconds"]
    if "maxFutureSkewSeconds" in spec:
        limits["max_future_skew"] = spec["maxFutureSkewSeconds"]
    try:
        opened = open_envelope(
            envelope,
            recipient=spec["self"],
            recipient_key=x25519_private(spec["recipient_x25519_secret_b64url"]),
            pinned_key=lambda _sender: sender_key,
            replay=store,
            now=spec["now"],
            **limits,
        )
    except EnvelopeError as exc:
        error = {"name": type(exc).__name__, "code": exc.code, "message": str(exc)}
        return {"ok": False, "error": error}
    return {"ok": True, "body": opened.body}


def _check_debug(case: Case, envelope: Mapping[str, Any]) -> None:
    debug = case.get("debug") or {}
    if "signing_preimage_canonical" in debug:
        preimage = signing_bytes(envelope).decode("utf-8")
        equal("signing preimage", preimage, debug["signing_preimage_canonical"])
    if "envelope_hash" in debug:
        equal("envelope hash", envelope_hash(envelope), debug["envelope_hash"])
    body = (case.get("seal_input") or {}).get("body")
    if "body_hash" in debug and body is not None:
        equal("body hash", digest(body), debug["body_hash"])


def _check_reproduction(
    case: Case, envelope: Mapping[str, Any], seal_input: Mapping[str, Any] | None
) -> None:
    """Rebuild the envelope from the recorded inputs and random bytes, byte for byte."""
    sender, recipient = dig(case, "sender"), dig(case, "recipient")
    signing_key = ed25519_private(sender["ed25519_secret"])
    if seal_input is not None and "rng_outputs_hex" in seal_input and case.get("tamper") is None:
        sealed = seal(
            id=seal_input["id"],
            sender=seal_input["from"],
            recipient=seal_input["to"],
            ts=seal_input["ts"],
            body=seal_input["body"],
            signing_key=signing_key,
            recipient_key=x25519_public(recipient["x25519_public"]),
            rng=recorded_rng(seal_input["rng_outputs_hex"]),
        )
        equal("sealed envelope", sealed, envelope)
    if "crafted_plaintext_b64" in case:
        parts = encrypt(
            base64.b64decode(case["crafted_plaintext_b64"]),
            x25519_public(recipient["x25519_public"]),
            rng=recorded_rng(case["craft_rng_outputs_hex"]),
        )
        equal("crafted epk/n/ct", parts, {k: envelope.get(k) for k in parts})
    # Every envelope the sender's key signed (tampered ones are re-signed) must
    # be what our signer writes: Ed25519 is deterministic.
    sig = envelope.get("sig")
    raw = b64_decode(sig) if isinstance(sig, str) else None
    sender_key = ed25519_public(sender["ed25519_public"])
    if (
        raw is not None
        and len(raw) == 64
        and verify_ed25519(sender_key, raw, signing_bytes(envelope))
    ):
        equal("signature", sign_envelope(envelope, signing_key)["sig"], sig)


def _seal_error(case: Case) -> None:
    spec = dig(case, "seal_input")
    body = dict(spec["body"])
    if "text_description" in body:
        match = _REPEAT.fullmatch(body.pop("text_description"))
        if match is None:
            raise Mismatch("unsupported text_description")
        body["text"] = match.group(1) * int(match.group(2))
    try:
        seal(
            id=spec["id"],
            sender=spec["from"],
            recipient=spec["to"],
            ts=spec["ts"],
            body=body,
            signing_key=ed25519_private(spec["senderSigningSecretKey"]),
            recipient_key=x25519_public(spec["recipientEncryptionPublicKey"]),
        )
    except EnvelopeError as exc:
        got = {"name": type(exc).__name__, "code": exc.code, "message": str(exc)}
        equal("seal error", got, case["seal_error"])
        return
    raise Mismatch("sealed an envelope the reference refused to seal")


def _sequence(case: Case) -> None:
    """Several opens sharing one replay store, run against each store implementation."""
    steps = dig(case, "sequence")
    with (
        tempfile.TemporaryDirectory(prefix="reefgate-conformance-") as tmp,
        SQLiteReplayStore(Path(tmp) / "replay.sqlite") as persistent,
    ):
        for store in (MemoryReplayStore(), persistent):
            for i, step in enumerate(steps, start=1):
                envelope = step["envelope"]
                _check_reproduction(case, envelope, step.get("seal_input"))
                got = _open(envelope, step["open_input"], store)
                equal(f"step {i} ({type(store).__name__})", got, step["open_result"])
