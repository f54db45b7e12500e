"""checks.json: the reference's deterministic floor against reefgate's (`gateway.peer.precheck`).

A case passes when both allow or both deny; the size and UTF-8 limits must
agree exactly. Where the reference denies and reefgate allows, the case is a
documented relaxation if `relaxations.explain` accounts for it, and a failure
otherwise; where reefgate denies what the reference allows, it fails (no
tightening is documented). The inbound column is checked too: a text the
reference could not seal is refused by `seal` with the same error.
"""

from __future__ import annotations

import base64
import re

from gateway.peer.conformance.harness import Case, Mismatch, Relaxed, dig, equal, unknown
from gateway.peer.conformance.relaxations import explain
from gateway.peer.envelope import open_envelope, seal
from gateway.peer.errors import EnvelopeError
from gateway.peer.identity import Identity, generate_identity
from gateway.peer.precheck import INVALID_UTF8, TOO_LARGE, precheck
from gateway.peer.replay import MemoryReplayStore

_LIMITS = frozenset({INVALID_UTF8, TOO_LARGE})
_ID = "01KXK8343R2N5GW62RPZACDFHF"
_NOW = 1_784_131_200


def _message(case: Case) -> str | bytes:
    data = case.get("input") or {}
    if "bytes_b64" in data:
        return base64.b64decode(data["bytes_b64"])
    if "text" in data:
        return str(data["text"])
    return str(dig(case, "input_large", "text"))


def check(case: Case) -> Relaxed | None:
    if case.get("expect") not in ("allow", "deny"):
        raise unknown(case)
    message = _message(case)
    ref = dig(case, "deterministic")
    ours = precheck(message)
    _text_returned(ours.text, message, ref.get("text_returned"))
    if set(ref["findings"]) & _LIMITS or set(ours.findings) & _LIMITS:
        equal("limit findings", list(ours.findings), ref["findings"])
    if "inbound" in case and case["inbound"] is not None and isinstance(message, str):
        _inbound(case, message)
    if ours.allowed == ref["allowed"]:
        return None
    if ours.allowed:
        relaxation = explain(message if isinstance(message, str) else "", ref["findings"])
        if relaxation is None:
            raise Mismatch(f"the reference denies ({', '.join(ref['findings'])}); reefgate allows")
        return Relaxed(relaxation.name, relaxation.reason)
    raise Mismatch(f"reefgate denies ({', '.join(ours.findings)}) what the reference allows")


# How the vectors record a returned text too long to write out.
_RETURNED_LONG = re.compile(r"<([0-9]+) chars, equal to the decoded input>")


def _text_returned(text: str | None, message: str | bytes, returned: object) -> None:
    """``text_returned``: true (the input itself), false (no text), or the decoded text."""
    if returned is True:
        equal("text checked", text, message if isinstance(message, str) else _decoded(message))
    elif returned is False:
        equal("text checked", text, None)
    elif isinstance(returned, str) and (long := _RETURNED_LONG.fullmatch(returned)):
        if not isinstance(message, bytes):
            raise Mismatch("a decoded text recorded for a text input")
        equal("text checked", text, _decoded(message))
        equal("text length", len(text or ""), int(long.group(1)))
    elif isinstance(returned, str):
        equal("text checked", text, returned)


def _decoded(message: bytes) -> str:
    return message.decode("utf-8").removeprefix("\ufeff")


_KEYS: list[tuple[Identity, Identity]] = []


def _parties() -> tuple[Identity, Identity]:
    if not _KEYS:
        _KEYS.append((generate_identity("alice", 1), generate_identity("bob", 1)))
    return _KEYS[0]


def _inbound(case: Case, text: str) -> None:
    """The reference sealed the text to bob and opened it, or could not seal it at all."""
    alice, bob = _parties()
    inbound = case["inbound"]
    try:
        envelope = seal(
            id=_ID,
            sender=str(alice.peer),
            recipient=str(bob.peer),
            ts=_NOW,
            body={"text": text},
            signing_key=alice.signing_key,
            recipient_key=bob.encryption_key.public_key(),
        )
    except EnvelopeError as exc:
        if inbound.get("result") != "not_sealable":
            raise Mismatch(f"seal refused the text ({exc}); the reference sealed it") from None
        got = {"name": type(exc).__name__, "code": exc.code, "message": str(exc)}
        equal("seal error", got, inbound["seal_error"])
        return
    if inbound.get("result") == "not_sealable":
        raise Mismatch("sealed a text the reference could not seal")
    opened = open_envelope(
        envelope,
        recipient=str(bob.peer),
        recipient_key=bob.encryption_key,
        pinned_key=lambda _sender: alice.signing_key.public_key(),
        replay=MemoryReplayStore(),
        now=_NOW,
    )
    equal("opened text", opened.body["text"], text)
