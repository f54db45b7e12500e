"""Identities, handle#epoch, fingerprints and rotation against identities.json."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.peer.encoding import b64url_decode, b64url_encode
from gateway.peer.errors import InvalidInput, MalformedError
from gateway.peer.identity import (
    Identity,
    Peer,
    ed25519_private,
    ed25519_public,
    fingerprint,
    format_handle_epoch,
    generate_identity,
    parse_handle_epoch,
    sign_rotation,
    verify_rotation,
    x25519_public,
)
from tests.peer.keys import ALICE, BOB
from tests.vectors import load_cases

CASES = load_cases("identities.json")


def _raw(text: str) -> bytes:
    raw = b64url_decode(text)
    assert raw is not None
    return raw


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_identities_vector(case: dict[str, Any]) -> None:
    kind = case["kind"]
    if kind == "identity":
        ed, x = case["ed25519"], case["x25519"]
        drawn = iter([bytes.fromhex(ed["secret_key_hex"]), bytes.fromhex(x["secret_key_hex"])])
        ident = generate_identity(case["handle"], case["epoch"], rng=lambda _n: next(drawn))
        assert str(ident.peer) == case["handle_epoch"]
        assert ident.secrets() == {
            "ed25519": ed["secret_key_b64url"],
            "x25519": x["secret_key_b64url"],
        }
        assert b64url_encode(ident.public.ed25519) == ed["public_key_b64url"]
        assert ident.public.x25519.hex() == x["public_key_hex"]
        assert fingerprint(ident.public.ed25519) == case["fingerprint_ed25519_only"]
        assert ident.public.fingerprint == case["fingerprint_ed25519_x25519"]
    elif kind == "rotation":
        statement = case["rotation"]
        key = case.get("verify_with_key_b64url") or case["old_ed25519_public_b64url"]
        assert verify_rotation(statement, ed25519_public(key)) is case["verify_with_old_key"]
        new = case["new_identity"]
        old = ed25519_private(case["old_ed25519_secret_b64url"])
        args = (old, _raw(new["ed25519_public_b64url"]), _raw(new["x25519_public_b64url"]))
        if "sign_error" in case:
            with pytest.raises(InvalidInput, match=case["sign_error"]["message"]):
                sign_rotation(*args, statement["newEpoch"])
        else:
            assert (
                sign_rotation(*args, statement["newEpoch"])["signature"] == statement["signature"]
            )
    elif kind == "parse_handle_epoch":
        result = case["result"]
        if result["ok"]:
            peer = parse_handle_epoch(case["input"])
            assert {"handle": peer.handle, "keyEpoch": peer.epoch} == result["value"]
        else:
            with pytest.raises(InvalidInput) as info:
                parse_handle_epoch(case["input"])
            assert str(info.value) == result["error"]["message"]
    elif kind == "format_handle_epoch":
        result = case["result"]
        if result["ok"]:
            assert format_handle_epoch(case["handle"], case["epoch"]) == result["value"]
        else:
            with pytest.raises(InvalidInput) as info:
                format_handle_epoch(case["handle"], case["epoch"])
            assert str(info.value) == result["error"]["message"]
    else:
        pytest.fail(f"unknown kind {kind}")


@pytest.mark.parametrize(
    "text",
    [
        "alice#1\n",
        "alice#1\r",
        " alice#1",
        "alice#١",  # an Arabic-Indic digit: \d would take it, the reference does not
        "alice#" + "9" * 5000,
        "a" * 64 + "#1",
        "alice#0",
        "",
        "#1",
    ],
)
def test_parse_refuses(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_handle_epoch(text)


def test_huge_epoch_is_an_epoch_error_not_a_crash() -> None:
    with pytest.raises(InvalidInput, match="invalid key epoch"):
        parse_handle_epoch("alice#" + "9" * 5000)


def test_parse_non_string() -> None:
    with pytest.raises(InvalidInput):
        parse_handle_epoch(7)


def test_longest_handle_and_epoch() -> None:
    peer = parse_handle_epoch("a" * 63 + "#9007199254740991")
    assert len(str(peer)) == 80


def test_same_claw_ignores_handle_case_only() -> None:
    assert Peer("Alice", 1).same_claw(Peer("alice", 1))
    assert not Peer("alice", 1).same_claw(Peer("alice", 2))


def test_format_accepts_integral_float_refuses_bool() -> None:
    # JSON cannot tell 3.0 from 3 in the reference.
    assert format_handle_epoch("bob", 3.0) == "bob#3"
    with pytest.raises(InvalidInput):
        format_handle_epoch("bob", True)


def test_identity_round_trips_through_its_secrets() -> None:
    again = Identity.from_secrets(str(ALICE.peer), ALICE.secrets())
    assert again.public == ALICE.public
    assert again.public.to_dict()["peer"] == "alice#1"


def test_generated_identities_differ() -> None:
    assert generate_identity("x").public != generate_identity("x").public


@pytest.mark.parametrize("key", ["A" * 42, "A" * 44, "A" * 43 + "=", "+" * 43, b"\x00" * 31])
def test_key_length_and_encoding(key: str | bytes) -> None:
    with pytest.raises(MalformedError, match="invalid key length"):
        x25519_public(key)


def test_rotation_tampering() -> None:
    statement = sign_rotation(ALICE.signing_key, BOB.public.ed25519, BOB.public.x25519, 2)
    old = ALICE.signing_key.public_key()
    assert verify_rotation(statement, old)
    for field, value in [
        ("newEpoch", 3),
        ("newEpoch", 2.5),
        ("newEpoch", True),
        ("newX25519Pub", b64url_encode(ALICE.public.x25519)),
        ("signature", str(statement["signature"])[:-1] + "A"),
    ]:
        assert not verify_rotation({**statement, field: value}, old), field
    missing = dict(statement)
    del missing["newEpoch"]
    assert not verify_rotation(missing, old)
    assert not verify_rotation([statement], old)
