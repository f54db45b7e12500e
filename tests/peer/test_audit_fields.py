"""Reef's encrypted audit fields and checkpoints against audit.json."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.canonical import canonical_str
from gateway.peer.audit import (
    decrypt_text,
    encrypt_text,
    open_fields,
    seal_fields,
    sign_checkpoint,
    verify_checkpoint,
)
from gateway.peer.errors import AuditCryptoError
from gateway.peer.identity import ed25519_private, ed25519_public
from tests.peer.keys import ALICE
from tests.vectors import load_cases

CASES = load_cases("audit.json")
CHAINS = [c for c in CASES if c["kind"] == "chain"]
CHECKPOINTS = [c for c in CASES if c["kind"] == "verify_checkpoint"]
DECRYPTS = [c for c in CASES if c["kind"] == "decrypt"]
KEY = bytes(range(32))


@pytest.mark.parametrize("case", CHAINS, ids=[c["id"] for c in CHAINS])
def test_chain_fields_and_checkpoint(case: dict[str, Any]) -> None:
    key = bytes.fromhex(case["audit_key_hex"])
    nonces: Iterator[bytes] = (bytes.fromhex(h) for h in case["nonce_rng"]["nonces_hex_in_order"])
    for entry, plain in zip(case["entries"], case["decrypted_payloads"], strict=True):
        stored = entry["event"]["payload"]
        assert open_fields(stored, key) == plain
        resealed = seal_fields(plain, key, rng=lambda _n: next(nonces))
        assert canonical_str(resealed) == canonical_str(stored)
    assert next(nonces, None) is None
    signer = case["signer"]
    head = case["checkpoint"]["head"]
    assert (
        sign_checkpoint(head, ed25519_private(signer["ed25519_secret_b64url"]))
        == case["checkpoint"]
    )
    public = ed25519_public(signer["ed25519_public_b64url"])
    assert verify_checkpoint(case["checkpoint"], public) is case["verifyCheckpoint"]


@pytest.mark.parametrize("case", CHECKPOINTS, ids=[c["id"] for c in CHECKPOINTS])
def test_checkpoint_vectors(case: dict[str, Any]) -> None:
    key = ed25519_public(case["verify_key_b64url"])
    assert verify_checkpoint(case["checkpoint"], key) is case["verifyCheckpoint"]


@pytest.mark.parametrize("case", DECRYPTS, ids=[c["id"] for c in DECRYPTS])
def test_wrong_key_does_not_decrypt(case: dict[str, Any]) -> None:
    with pytest.raises(AuditCryptoError):
        open_fields(case["entry"]["event"]["payload"], bytes.fromhex(case["audit_key_hex"]))


def test_only_text_and_reason_strings_are_encrypted() -> None:
    value = {
        "text": "a",
        "Text": "b",
        "reason": None,
        "nested": [{"reason": "c"}, {"text": 1}, "text"],
        "text2": "d",
    }
    sealed = seal_fields(value, KEY)
    assert isinstance(sealed, dict)
    assert set(sealed["text"]) == {"enc"}
    assert (sealed["Text"], sealed["reason"], sealed["text2"]) == ("b", None, "d")
    assert sealed["nested"][0]["reason"] != "c"
    assert sealed["nested"][1:] == [{"text": 1}, "text"]
    assert open_fields(sealed, KEY) == value


def test_empty_and_unicode_text() -> None:
    for text in ("", "Grüße 🌊"):
        assert decrypt_text(encrypt_text(text, KEY), KEY) == text


@pytest.mark.parametrize("field", [{"enc": "!!"}, {"enc": "AAAA"}, {"enc": 1}, "x", {}])
def test_bad_encrypted_field(field: object) -> None:
    with pytest.raises(AuditCryptoError):
        decrypt_text(field, KEY)


def test_checkpoint_of_empty_chain_and_bad_heads() -> None:
    checkpoint = sign_checkpoint("", ALICE.signing_key)
    assert verify_checkpoint(checkpoint, ALICE.signing_key.public_key())
    with pytest.raises(AuditCryptoError):
        sign_checkpoint("A" * 64, ALICE.signing_key)
    assert not verify_checkpoint({**checkpoint, "extra": 1}, ALICE.signing_key.public_key())
    assert not verify_checkpoint(None, ALICE.signing_key.public_key())
