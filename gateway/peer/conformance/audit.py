"""audit.json: Reef's chains through `gateway.observe.audit`, plus fields and checkpoints."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gateway.canonical import canonical_bytes, canonical_str
from gateway.observe.audit import verify
from gateway.peer.audit import open_fields, seal_fields, sign_checkpoint, verify_checkpoint
from gateway.peer.conformance.harness import (
    Case,
    Mismatch,
    Relaxed,
    dig,
    equal,
    recorded_rng,
    unknown,
)
from gateway.peer.errors import AuditCryptoError
from gateway.peer.identity import ed25519_private, ed25519_public


def check(case: Case) -> Relaxed | None:
    kind = case.get("kind")
    if kind == "chain":
        _chain(case)
    elif kind == "verify_chain":
        expected = case.get("expected_arg") or {}
        ok, _ = _verify(case["entries"], expected.get("head"), expected.get("length"))
        equal("verifyChain", ok, case["verifyChain"])
    elif kind == "verify_checkpoint":
        key = ed25519_public(case["verify_key_b64url"])
        equal(
            "verifyCheckpoint", verify_checkpoint(case["checkpoint"], key), case["verifyCheckpoint"]
        )
    elif kind == "decrypt":
        try:
            open_fields(
                dig(case, "entry", "event", "payload"), bytes.fromhex(case["audit_key_hex"])
            )
        except AuditCryptoError:
            return None
        raise Mismatch("decrypted with the wrong key")
    else:
        raise unknown(case, "kind")
    return None


def _verify(entries: Sequence[Any], head: str | None, length: int | None) -> tuple[bool, str]:
    """The gateway's verifier on the chain written out as its JSONL file."""
    with tempfile.TemporaryDirectory(prefix="reefgate-conformance-") as tmp:
        path = Path(tmp) / "audit.jsonl"
        path.write_bytes(b"".join(canonical_bytes(e) + b"\n" for e in entries))
        result = verify(path, expected_head=head, expected_entries=length)
    return result.ok, result.head


def _chain(case: Case) -> None:
    entries = dig(case, "entries")
    export = "".join(canonical_str(e) + "\n" for e in entries)
    equal("redacted JSONL export", export, case["export_redacted_jsonl"])
    for entry, preimage in zip(entries, case["entry_hash_preimages"], strict=True):
        equal("event canonical", canonical_str(entry["event"]), preimage["event_canonical"])
    expected = dig(case, "verifyChain_with_expected", "expected")
    ok, head = _verify(entries, expected["head"], expected["length"])
    equal("verifyChain", ok, case["verifyChain"])
    equal("head", head, expected["head"])

    # Encrypted fields: they open to the recorded payloads, and sealing those
    # with the recorded nonces gives back the stored entries byte for byte.
    key = bytes.fromhex(case["audit_key_hex"])
    rng = recorded_rng(dig(case, "nonce_rng", "nonces_hex_in_order"))
    for i, (entry, plain) in enumerate(zip(entries, case["decrypted_payloads"], strict=True)):
        payload = entry["event"]["payload"]
        equal(f"entry {i + 1} decrypted", open_fields(payload, key), plain)
        equal(
            f"entry {i + 1} encrypted",
            canonical_str(seal_fields(plain, key, rng=rng)),
            canonical_str(payload),
        )

    signer = dig(case, "signer")
    checkpoint = sign_checkpoint(head, ed25519_private(signer["ed25519_secret_b64url"]))
    equal("checkpoint", checkpoint, case["checkpoint"])
    public = ed25519_public(signer["ed25519_public_b64url"])
    equal(
        "verifyCheckpoint", verify_checkpoint(case["checkpoint"], public), case["verifyCheckpoint"]
    )
