"""receipts.json: signing and verifying receipts, and the receipts the inbound pipeline made."""

from __future__ import annotations

from gateway.canonical import canonical_str, digest
from gateway.observe import audit as chain
from gateway.peer.audit import decrypt_text
from gateway.peer.conformance.harness import Case, Mismatch, Relaxed, dig, equal, unknown
from gateway.peer.errors import InvalidInput
from gateway.peer.identity import ed25519_private, ed25519_public
from gateway.peer.receipts import sign_receipt, verify_receipt
from gateway.review.model import approval_digest

# composeInbound's audit key in these vectors.
_PIPELINE_AUDIT_KEY = bytes([0x09]) * 32


def check(case: Case) -> Relaxed | None:
    expect = case.get("expect")
    signer = dig(case, "signer")
    if expect == "sign_error":
        try:
            sign_receipt(
                dig(case, "receipt_body"), ed25519_private(signer["ed25519_secret_b64url"])
            )
        except InvalidInput as exc:
            equal("sign error", str(exc), case["sign_error"]["message"])
            return None
        raise Mismatch("signed a receipt the reference refused to sign")
    if expect not in ("valid", "invalid"):
        raise unknown(case)
    receipt = dig(case, "receipt")
    key = ed25519_public(case.get("verify_key_b64url") or signer["ed25519_public_b64url"])
    equal("verify", verify_receipt(receipt, key), case["verify"])
    if "receipt_body" in case:
        body = case["receipt_body"]
        equal("signed message", canonical_str(body), case["signed_message_canonical"])
        signed = sign_receipt(body, ed25519_private(signer["ed25519_secret_b64url"]))
        equal("receipt", signed, receipt)
    if case.get("origin") == "composeInbound":
        _pipeline(case, receipt)
    return None


def _pipeline(case: Case, receipt: dict[str, object]) -> None:
    """The receipt's auditHead is the entry recording the message, and bodyHash the message's."""
    entry = dig(case, "audit_head_entry")
    event = entry["event"]
    payload = event["payload"]
    # Computed, not copied: the chain formula of gateway.observe.audit.
    equal("auditHead", chain._entry_hash(entry["prevHash"], event), receipt["auditHead"])
    equal("entryHash", entry["entryHash"], receipt["auditHead"])
    equal("recorded id", payload["id"], receipt["id"])
    equal("recorded bodyHash", payload["bodyHash"], receipt["bodyHash"])
    equal("message body hash", receipt["bodyHash"], case["body_hash_of_message"])
    if "text" not in payload:
        return  # a rejected message's text is not kept
    text = decrypt_text(payload["text"], _PIPELINE_AUDIT_KEY)
    equal("bodyHash of the recorded text", digest({"text": text}), receipt["bodyHash"])
    envelope = dig(case, "envelope")
    approval = approval_digest(
        source=envelope["from"],
        destination=envelope["to"],
        direction="inbound",
        body={"text": text},
        policy_version=payload["verdict"]["policyVersion"],
        proposal_id=envelope["id"],
    )
    equal("approvalDigest", approval, payload["approvalDigest"])
