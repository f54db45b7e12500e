"""Signed receipts against receipts.json."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.canonical import canonical_str
from gateway.peer.errors import InvalidInput
from gateway.peer.identity import ed25519_private, ed25519_public
from gateway.peer.receipts import sign_receipt, verify_receipt
from tests.peer.keys import ALICE, BOB
from tests.vectors import load_cases

CASES = load_cases("receipts.json")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_receipts_vector(case: dict[str, Any]) -> None:
    signer = case["signer"]
    secret = ed25519_private(signer["ed25519_secret_b64url"])
    if case["expect"] == "sign_error":
        with pytest.raises(InvalidInput, match=case["sign_error"]["message"]):
            sign_receipt(case["receipt_body"], secret)
        return
    key = ed25519_public(case.get("verify_key_b64url") or signer["ed25519_public_b64url"])
    assert verify_receipt(case["receipt"], key) is case["verify"]
    if "receipt_body" in case:
        assert canonical_str(case["receipt_body"]) == case["signed_message_canonical"]
        assert sign_receipt(case["receipt_body"], secret) == case["receipt"]


BODY = {
    "id": "01KXK8306RGCD3XRYHZRVDEHP4",
    "bodyHash": "0" * 64,
    "auditHead": "f" * 64,
    "status": "rejected",
    "category": "deterministic_deny",
}


def test_round_trip_and_key_binding() -> None:
    receipt = sign_receipt(BODY, BOB.signing_key)
    assert verify_receipt(receipt, BOB.signing_key.public_key())
    assert not verify_receipt(receipt, ALICE.signing_key.public_key())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("category", "x" * 65),
        ("category", "\U0001f30a" * 33),  # 66 UTF-16 units
        ("category", None),
        ("status", "ok"),
        ("auditHead", "F" * 64),
        ("id", "81KXK8306RGCD3XRYHZRVDEHP4"),
    ],
)
def test_shape_is_checked_on_both_sides(field: str, value: object) -> None:
    body = {**BODY, field: value}
    with pytest.raises(InvalidInput):
        sign_receipt(body, BOB.signing_key)
    receipt = {**sign_receipt(BODY, BOB.signing_key), field: value}
    assert not verify_receipt(receipt, BOB.signing_key.public_key())


def test_category_at_the_limit() -> None:
    receipt = sign_receipt({**BODY, "category": "\U0001f30a" * 32}, BOB.signing_key)
    assert verify_receipt(receipt, BOB.signing_key.public_key())


@pytest.mark.parametrize("receipt", [None, [], "x", {"signature": "x"}])
def test_verify_never_raises(receipt: object) -> None:
    assert verify_receipt(receipt, BOB.signing_key.public_key()) is False
