"""Signed device requests against signed-requests.json, and the client's side of them."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from gateway.peer.errors import InvalidInput
from gateway.peer.identity import ed25519_private, ed25519_public
from gateway.peer.requests import (
    DeviceRequestSigner,
    RelayVerifier,
    sign_device_request,
    signed_message,
    signed_path,
)
from tests.peer.keys import ALICE, CAROL
from tests.vectors import load_cases

CASES = load_cases("signed-requests.json")
NOW = 1_784_131_200
KEYS = {
    c["handle"]: ed25519_public(c["signer"]["ed25519_public_b64url"])
    for c in CASES
    if "handle" in c and "ed25519_public_b64url" in c["signer"]
}


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# The "replay: ..." cases are one relay's first and second sighting.
REPLAY_RELAY = RelayVerifier(KEYS.get, clock=lambda: NOW)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_signed_requests_vector(case: dict[str, Any]) -> None:
    key = ed25519_private(case["signer"]["ed25519_secret_b64url"])
    if case["expect"] == "sign_error":
        spec = case["input"]
        with pytest.raises(InvalidInput, match=case["sign_error"]["message"]):
            sign_device_request(
                key,
                method=spec["method"],
                path=spec["path"],
                ts=spec["ts"],
                body_sha256=spec["bodySha256"],
            )
        return
    body_sha256 = hashlib.sha256(case["body"].encode()).hexdigest()
    assert body_sha256 == case["bodySha256"]
    fields = {"method": case["method"], "path": case["path"], "ts": case["ts"]}
    message = signed_message(body_sha256=body_sha256, **fields)
    assert message.decode() == case["signed_message_canonical"]
    request = case["relay_request"]
    if case["expect"] == "accept":
        assert (
            sign_device_request(key, body_sha256=body_sha256, **fields) == case["signature_b64url"]
        )
        assert signed_path(request["url"]) == case["path"]
    relay = (
        REPLAY_RELAY
        if case["name"].startswith("replay:")
        else RelayVerifier(KEYS.get, clock=Clock(case["relay_now"]))
    )
    verdict = relay.verify(
        request["method"], request["url"], request["headers"], request["body"].encode()
    )
    status = case["relay_response"]["status"]
    if status in (401, 409):
        assert (verdict.status, verdict.error) == (status, case["relay_response"]["body"]["error"])
    else:
        assert verdict.ok
        assert verdict.handle == case["handle"]
    assert (verdict.status != 401) is case["signature_verified"]


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://relay.test", "/"),
        ("https://relay.test/v1/a/../b/./c", "/v1/b/c"),
        ("https://relay.test/v1/a/%2E%2e/b", "/v1/b"),
        ("https://relay.test/v1/a/..", "/v1/"),
        ("https://relay.test/v1/caf\u00e9 x", "/v1/caf%C3%A9%20x"),
        ("https://relay.test/v1/a%2fb", "/v1/a%2fb"),
        ("https://relay.test/v1/mail?sig=x&ts=1&handle=a&after=5", "/v1/mail?after=5"),
        ("https://relay.test/v1/mail?sig=x", "/v1/mail"),
        ("https://relay.test/v1/mail?q=a b+c%2Bd~*&&=e#frag", "/v1/mail?q=a+b+c%2Bd%7E*&=e"),
        ("https://relay.test/v1/mail?q=%E2%82%AC%ff", "/v1/mail?q=%E2%82%AC%EF%BF%BD"),
        ("/v1/mail?after=5", "/v1/mail?after=5"),
        ("  https://relay.test/v1/x\t\n ", "/v1/x"),
    ],
)
def test_signed_path(url: str, path: str) -> None:
    assert signed_path(url) == path


def test_signer_and_relay_agree() -> None:
    signer = DeviceRequestSigner("alice", ALICE.signing_key, clock=Clock())
    relay = RelayVerifier({"alice": ALICE.signing_key.public_key()}.get, clock=Clock())
    url = "https://relay.test/v1/mail?after=5&x=a%20b"
    signed = signer.sign("POST", url, b'{"a":1}')
    assert signed.path == "/v1/mail?after=5&x=a+b"
    assert relay.verify("POST", url, signed.headers, b'{"a":1}').ok
    assert relay.verify("POST", url, signed.headers, b'{"a":2}').status == 401


def test_signer_timestamps_strictly_increase() -> None:
    clock = Clock()
    signer = DeviceRequestSigner("alice", ALICE.signing_key, clock=clock)
    relay = RelayVerifier({"alice": ALICE.signing_key.public_key()}.get, clock=clock)
    first = signer.sign("GET", "https://relay.test/v1/friends")
    second = signer.sign("GET", "https://relay.test/v1/friends")
    assert second.ts == first.ts + 1
    # Identical requests in one second would otherwise share a signature: a replay.
    assert relay.verify("GET", "https://relay.test/v1/friends", first.headers).ok
    assert relay.verify("GET", "https://relay.test/v1/friends", second.headers).ok
    clock.now += 100
    assert signer.sign("GET", "https://relay.test/v1/friends").ts == NOW + 100


def test_signer_refuses_to_run_past_the_relay_window() -> None:
    signer = DeviceRequestSigner("alice", ALICE.signing_key, clock=Clock())
    for _ in range(301):
        signer.sign("GET", "/v1/friends")
    with pytest.raises(InvalidInput):
        signer.sign("GET", "/v1/friends")


def test_query_parameter_variant() -> None:
    signed = DeviceRequestSigner("alice", ALICE.signing_key, clock=Clock()).sign(
        "GET", "/v1/mail?after=5"
    )
    relay = RelayVerifier({"alice": ALICE.signing_key.public_key()}.get, clock=Clock())
    url = f"https://relay.test/v1/mail?after=5&handle=alice&ts={signed.ts}&sig={signed.signature}"
    assert relay.verify("GET", url, {}).ok


def test_relay_replay_window() -> None:
    clock = Clock()
    signer = DeviceRequestSigner("alice", ALICE.signing_key, clock=clock)
    relay = RelayVerifier({"alice": ALICE.signing_key.public_key()}.get, clock=clock)
    signed = signer.sign("GET", "/v1/friends")
    assert relay.verify("GET", "/v1/friends", signed.headers).ok
    clock.now += 299
    assert relay.verify("GET", "/v1/friends", signed.headers).status == 409
    clock.now += 2
    assert relay.verify("GET", "/v1/friends", signed.headers).status == 401  # now stale


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-reef-handle": "alice", "x-reef-ts": "x", "x-reef-sig": "A"},
        {"x-reef-handle": "alice", "x-reef-ts": "-1784131200", "x-reef-sig": "A"},
        {"x-reef-handle": "al ice", "x-reef-ts": str(NOW), "x-reef-sig": "A"},
        {"x-reef-handle": "carol", "x-reef-ts": str(NOW), "x-reef-sig": "A" * 86},
    ],
)
def test_relay_refusals(headers: dict[str, str]) -> None:
    relay = RelayVerifier({"alice": ALICE.signing_key.public_key()}.get, clock=Clock())
    assert relay.verify("GET", "/v1/friends", headers).status == 401


def test_unknown_signer() -> None:
    signed = DeviceRequestSigner("carol", CAROL.signing_key, clock=Clock()).sign("GET", "/v1/x")
    relay = RelayVerifier({"alice": ALICE.signing_key.public_key()}.get, clock=Clock())
    assert relay.verify("GET", "/v1/x", signed.headers).status == 401


def test_signer_refuses_a_bad_handle() -> None:
    with pytest.raises(InvalidInput):
        DeviceRequestSigner("-alice", ALICE.signing_key)
