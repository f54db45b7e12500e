"""digests.json: approval digests and effective policy versions, through the gateway's own."""

from __future__ import annotations

from gateway.canonical import canonical_str, digest
from gateway.guard.verdict import check_rules, effective_policy_version
from gateway.peer.conformance.harness import Case, Mismatch, Relaxed, dig, equal, unknown
from gateway.review.model import approval_digest


def check(case: Case) -> Relaxed | None:
    kind = case.get("kind")
    if kind == "approvalDigest":
        _approval(case)
    elif kind == "effectiveGuardPolicyVersion":
        _policy(case)
    else:
        raise unknown(case, "kind")
    return None


def _approval(case: Case) -> None:
    proposal = dig(case, "proposal")
    equal("body canonical", canonical_str(proposal["body"]), case["body_canonical"])
    equal("bodyHash", digest(proposal["body"]), case["bodyHash"])
    got = approval_digest(
        source=proposal["from"],
        destination=proposal["to"],
        direction=proposal["direction"],
        body=proposal["body"],
        policy_version=proposal["policyVersion"],
        proposal_id=proposal.get("id"),
    )
    equal("approvalDigest", got, case["approvalDigest"])


def _policy(case: Case) -> None:
    if case.get("expect") not in ("ok", "rules_rejected"):
        raise unknown(case)
    rules = case.get("rules") or {}
    outbound, inbound = rules.get("outbound"), rules.get("inbound")
    # reefgate keeps the full digest (effective_full); the 8-hex variant is an
    # older lineage that let colliding rule sets share an approval identity.
    got = effective_policy_version(case["base"], outbound, inbound)
    equal("effective policy version", got, case["effective_full"])
    if case.get("rules_digest_sha256") is not None:
        equal("rules digest", got.rpartition("+")[2], case["rules_digest_sha256"])
    accepted = True
    for text in (outbound, inbound):
        try:
            check_rules(text)
        except ValueError:
            accepted = False
    expected = dig(case, "assertGuardRules", "ok")
    if accepted != expected:
        raise Mismatch(f"rules {'accepted' if accepted else 'refused'}; reference ok={expected}")
