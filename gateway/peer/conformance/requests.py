"""signed-requests.json: device request signatures, the client's signed path, the relay's check."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gateway.peer.conformance.harness import (
    Case,
    CaseResult,
    Mismatch,
    Relaxed,
    dig,
    equal,
    run_cases,
    unknown,
)
from gateway.peer.errors import InvalidInput
from gateway.peer.identity import ed25519_private, ed25519_public
from gateway.peer.requests import RelayVerifier, sign_device_request, signed_message, signed_path

# Cases named "replay: ..." are consecutive requests to one relay (the first
# use, then the repeat); every other case met a fresh relay.
_REPLAY_PREFIX = "replay:"


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def run(data: Mapping[str, Any]) -> tuple[CaseResult, ...]:
    cases: Sequence[Case] = data["cases"]
    # The relay knows each signer's key under its handle.
    keys: dict[str, Ed25519PublicKey] = {}
    for case in cases:
        signer = case.get("signer") or {}
        if "handle" in case and "ed25519_public_b64url" in signer:
            keys[case["handle"]] = ed25519_public(signer["ed25519_public_b64url"])
    clock = _Clock()
    shared = RelayVerifier(keys.get, clock=clock)

    def check(case: Case) -> Relaxed | None:
        expect = case.get("expect")
        if expect == "sign_error":
            _sign_error(case)
        elif expect in ("accept", "reject"):
            replaying = str(case.get("name", "")).startswith(_REPLAY_PREFIX)
            relay = shared if replaying else RelayVerifier(keys.get, clock=clock)
            clock.now = case["relay_now"]
            _signed(case)
            _relay(case, relay)
        else:
            raise unknown(case)
        return None

    return run_cases(cases, check)


def _signed(case: Case) -> None:
    body_sha256 = hashlib.sha256(case["body"].encode("utf-8")).hexdigest()
    equal("bodySha256", body_sha256, case["bodySha256"])
    fields = {"method": case["method"], "path": case["path"], "ts": case["ts"]}
    message = signed_message(body_sha256=body_sha256, **fields)
    equal("signed message", message.decode("utf-8"), case["signed_message_canonical"])
    if case["expect"] == "accept":
        key = ed25519_private(dig(case, "signer", "ed25519_secret_b64url"))
        signature = sign_device_request(key, body_sha256=body_sha256, **fields)
        equal("signature", signature, case["signature_b64url"])
        # What a client derives from the URL it sends is what the relay verifies.
        equal("signed path", signed_path(dig(case, "relay_request", "url")), case["path"])


def _relay(case: Case, relay: RelayVerifier) -> None:
    request = dig(case, "relay_request")
    verdict = relay.verify(
        request["method"], request["url"], request["headers"], request["body"].encode("utf-8")
    )
    response = dig(case, "relay_response")
    refused = response["status"] in (401, 409)
    # Other statuses are the route's answer, after the signature was accepted.
    equal("relay status", verdict.status, response["status"] if refused else 200)
    if refused:
        equal("relay error", verdict.error, response["body"]["error"])
    equal("signature verified", verdict.status != 401, case["signature_verified"])


def _sign_error(case: Case) -> None:
    spec = dig(case, "input")
    key = ed25519_private(dig(case, "signer", "ed25519_secret_b64url"))
    try:
        sign_device_request(
            key,
            method=spec["method"],
            path=spec["path"],
            ts=spec["ts"],
            body_sha256=spec["bodySha256"],
        )
    except InvalidInput as exc:
        equal("sign error", str(exc), case["sign_error"]["message"])
        return
    raise Mismatch("signed a request the reference refused to sign")
