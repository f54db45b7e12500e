"""identities.json: key generation, fingerprints, handle#epoch, rotation statements."""

from __future__ import annotations

from gateway.peer.conformance.harness import Case, Mismatch, Relaxed, dig, equal, unknown
from gateway.peer.encoding import b64url_decode, b64url_encode
from gateway.peer.errors import InvalidInput
from gateway.peer.identity import (
    ed25519_private,
    ed25519_public,
    fingerprint,
    format_handle_epoch,
    generate_identity,
    parse_handle_epoch,
    rotation_message,
    sign_rotation,
    verify_rotation,
)


def check(case: Case) -> Relaxed | None:
    kind = case.get("kind")
    if kind == "identity":
        _identity(case)
    elif kind == "rotation":
        _rotation(case)
    elif kind == "parse_handle_epoch":
        _parse(case)
    elif kind == "format_handle_epoch":
        _format(case)
    else:
        raise unknown(case, "kind")
    return None


def _identity(case: Case) -> None:
    ed, x = dig(case, "ed25519"), dig(case, "x25519")
    # generateIdentity drew the Ed25519 seed, then the X25519 secret.
    drawn = iter([bytes.fromhex(ed["secret_key_hex"]), bytes.fromhex(x["secret_key_hex"])])
    identity = generate_identity(case["handle"], case["epoch"], rng=lambda _n: next(drawn))
    public = identity.public
    secrets = identity.secrets()
    equal("handle#epoch", str(identity.peer), case["handle_epoch"])
    equal("ed25519 secret", secrets["ed25519"], ed["secret_key_b64url"])
    equal("x25519 secret", secrets["x25519"], x["secret_key_b64url"])
    equal("ed25519 public", b64url_encode(public.ed25519), ed["public_key_b64url"])
    equal("ed25519 public hex", public.ed25519.hex(), ed["public_key_hex"])
    equal("x25519 public", b64url_encode(public.x25519), x["public_key_b64url"])
    equal("x25519 public hex", public.x25519.hex(), x["public_key_hex"])
    equal("fingerprint (ed25519)", fingerprint(public.ed25519), case["fingerprint_ed25519_only"])
    equal("fingerprint (both keys)", public.fingerprint, case["fingerprint_ed25519_x25519"])


def _rotation(case: Case) -> None:
    statement = dig(case, "rotation")
    new = dig(case, "new_identity")
    verify_key = case.get("verify_with_key_b64url") or case["old_ed25519_public_b64url"]
    equal(
        "verify",
        verify_rotation(statement, ed25519_public(verify_key)),
        case["verify_with_old_key"],
    )
    new_ed = b64url_decode(new["ed25519_public_b64url"])
    new_x = b64url_decode(new["x25519_public_b64url"])
    if new_ed is None or new_x is None:
        raise Mismatch("the case's new keys are not base64url")
    old = ed25519_private(case["old_ed25519_secret_b64url"])
    if "sign_error" in case:
        try:
            sign_rotation(old, new_ed, new_x, statement["newEpoch"])
        except InvalidInput as exc:
            equal("sign error", str(exc), case["sign_error"]["message"])
        else:
            raise Mismatch("signed a rotation the reference refused to sign")
        return
    signed = sign_rotation(old, new_ed, new_x, statement["newEpoch"])
    message = rotation_message(
        new["ed25519_public_b64url"], new["x25519_public_b64url"], statement["newEpoch"]
    )
    equal("signed message", message.decode("utf-8"), case["signed_message_canonical"])
    equal("signature", signed["signature"], statement["signature"])
    equal("statement", signed, {key: statement.get(key) for key in signed})


def _parse(case: Case) -> None:
    result = dig(case, "result")
    try:
        peer = parse_handle_epoch(case["input"])
    except InvalidInput as exc:
        if result["ok"]:
            raise Mismatch(f"refused ({exc}); the reference parsed it") from None
        equal("error", str(exc), result["error"]["message"])
        return
    if not result["ok"]:
        raise Mismatch(f"parsed as {peer}; the reference refused it")
    equal("value", {"handle": peer.handle, "keyEpoch": peer.epoch}, result["value"])


def _format(case: Case) -> None:
    result = dig(case, "result")
    try:
        text = format_handle_epoch(case["handle"], case["epoch"])
    except InvalidInput as exc:
        if result["ok"]:
            raise Mismatch(f"refused ({exc}); the reference formatted it") from None
        equal("error", str(exc), result["error"]["message"])
        return
    if not result["ok"]:
        raise Mismatch(f"formatted as {text!r}; the reference refused it")
    equal("value", text, result["value"])
