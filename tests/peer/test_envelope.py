"""Envelope v1 against envelopes.json, and what the vectors do not pin down."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.canonical import canonical_bytes
from gateway.peer.encoding import b64_encode
from gateway.peer.envelope import (
    MAX_PLAINTEXT_BYTES,
    Opened,
    encrypt,
    envelope_hash,
    open_envelope,
    seal,
    sign_envelope,
)
from gateway.peer.errors import (
    BadSignatureError,
    EnvelopeError,
    ExpiredError,
    MalformedError,
    NotPinnedError,
    ReplayedError,
    TooLargeError,
)
from gateway.peer.identity import (
    Identity,
    ed25519_private,
    ed25519_public,
    x25519_private,
    x25519_public,
)
from gateway.peer.replay import Binding, MemoryReplayStore, ReplayStore, ReplayStoreError
from gateway.peer.replay_sqlite import SQLiteReplayStore
from tests.peer.keys import ALICE, BOB, CAROL
from tests.vectors import load_cases

CASES = load_cases("envelopes.json")
NOW = 1_784_131_200
ID = "01KXK8343R2N5GW62RPZACDFHF"


def _rng(outputs: list[str]) -> Callable[[int], bytes]:
    it: Iterator[bytes] = (bytes.fromhex(h) for h in outputs)
    return lambda n: next(it)


def _open(envelope: object, spec: dict[str, Any], store: ReplayStore) -> dict[str, Any]:
    pinned = spec["sender_ed25519_public_b64url"]
    key = None if pinned is None else ed25519_public(pinned)
    limits = {}
    if "maxAgeSeconds" in spec:
        limits["max_age"] = spec["maxAgeSeconds"]
    if "maxFutureSkewSeconds" in spec:
        limits["max_future_skew"] = spec["maxFutureSkewSeconds"]
    try:
        opened = open_envelope(
            envelope,
            recipient=spec["self"],
            recipient_key=x25519_private(spec["recipient_x25519_secret_b64url"]),
            pinned_key=lambda _sender: key,
            replay=store,
            now=spec["now"],
            **limits,
        )
    except EnvelopeError as exc:
        return {
            "ok": False,
            "error": {"name": type(exc).__name__, "code": exc.code, "message": str(exc)},
        }
    return {"ok": True, "body": opened.body}


def _seal_input(case: dict[str, Any], spec: dict[str, Any]) -> dict[str, object]:
    return seal(
        id=spec["id"],
        sender=spec["from"],
        recipient=spec["to"],
        ts=spec["ts"],
        body=spec["body"],
        signing_key=ed25519_private(case["sender"]["ed25519_secret"]),
        recipient_key=x25519_public(case["recipient"]["x25519_public"]),
        rng=_rng(spec["rng_outputs_hex"]),
    )


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReplayStore]:
    if request.param == "memory":
        yield MemoryReplayStore()
        return
    with SQLiteReplayStore(tmp_path / "replay.sqlite") as persistent:
        yield persistent


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_envelopes_vector(case: dict[str, Any], tmp_path: Path) -> None:
    expect = case["expect"]
    if expect == "seal_error":
        spec = dict(case["seal_input"])
        body = dict(spec["body"])
        if "text_description" in body:
            char, count = body.pop("text_description").split(" * ")
            body["text"] = char.strip("'") * int(count)
        with pytest.raises(EnvelopeError) as info:
            seal(
                id=spec["id"],
                sender=spec["from"],
                recipient=spec["to"],
                ts=spec["ts"],
                body=body,
                signing_key=ed25519_private(spec["senderSigningSecretKey"]),
                recipient_key=x25519_public(spec["recipientEncryptionPublicKey"]),
            )
        error = info.value
        assert {"name": type(error).__name__, "code": error.code, "message": str(error)} == case[
            "seal_error"
        ]
    elif expect == "sequence":
        with SQLiteReplayStore(tmp_path / "r.sqlite") as persistent:
            for store in (MemoryReplayStore(), persistent):
                for step in case["sequence"]:
                    if "rng_outputs_hex" in step.get("seal_input", {}):
                        assert _seal_input(case, step["seal_input"]) == step["envelope"]
                    assert _open(step["envelope"], step["open_input"], store) == step["open_result"]
    else:
        envelope = case["envelope"]
        assert envelope_hash(envelope) == case["debug"]["envelope_hash"]
        spec = case.get("seal_input", {})
        if "rng_outputs_hex" in spec and case.get("tamper") is None:
            assert _seal_input(case, spec) == envelope
        if "crafted_plaintext_b64" in case:
            parts = encrypt(
                base64.b64decode(case["crafted_plaintext_b64"]),
                x25519_public(case["recipient"]["x25519_public"]),
                rng=_rng(case["craft_rng_outputs_hex"]),
            )
            assert parts == {k: envelope[k] for k in parts}
            signed = sign_envelope(envelope, ed25519_private(case["sender"]["ed25519_secret"]))
            assert signed["sig"] == envelope["sig"]
        assert _open(envelope, case["open_input"], MemoryReplayStore()) == case["open_result"]


# ---------------------------------------------------------------------------
# Beyond the vectors


def _seal(body: dict[str, object] | None = None, **kw: Any) -> dict[str, object]:
    args: dict[str, Any] = {
        "id": ID,
        "sender": "alice#1",
        "recipient": "bob#1",
        "ts": NOW,
        "body": body or {"text": "hi"},
        "signing_key": ALICE.signing_key,
        "recipient_key": BOB.encryption_key.public_key(),
    }
    args.update(kw)
    return seal(**args)


def _open_as_bob(
    envelope: object, store: ReplayStore | None = None, now: float = NOW, pinned: Identity = ALICE
) -> Opened:
    return open_envelope(
        envelope,
        recipient="bob#1",
        recipient_key=BOB.encryption_key,
        pinned_key=lambda _s: pinned.signing_key.public_key(),
        replay=store if store is not None else MemoryReplayStore(),
        now=now,
    )


def _crafted(plaintext: bytes, **fields: object) -> dict[str, object]:
    unsigned: dict[str, object] = {"v": 1, "id": ID, "from": "alice#1", "to": "bob#1", "ts": NOW}
    unsigned.update(encrypt(plaintext, BOB.encryption_key.public_key()))
    unsigned.update(fields)
    return sign_envelope(unsigned, ALICE.signing_key)


def test_round_trip_and_opened_fields() -> None:
    envelope = _seal({"text": "hello", "thread": ID})
    opened = _open_as_bob(envelope)
    assert opened.body == {"text": "hello", "thread": ID}
    assert (str(opened.sender), str(opened.recipient), opened.id) == ("alice#1", "bob#1", ID)
    assert opened.envelope_hash == envelope_hash(envelope)
    assert list(envelope) == ["v", "id", "from", "to", "ts", "epk", "n", "ct", "sig"]


def test_every_signed_field_is_covered() -> None:
    envelope = _seal()
    for field, value in [
        ("id", "01KXK8343R2N5GW62RPZACDFHG"),
        ("from", "alice#2"),
        ("to", "bob#2"),
        ("ts", NOW - 1),
        ("n", b64_encode(b"\x00" * 12)),
        ("epk", b64_encode(CAROL.public.x25519)),
    ]:
        with pytest.raises(BadSignatureError):
            _open_as_bob({**envelope, field: value})


def test_signature_from_another_key() -> None:
    with pytest.raises(BadSignatureError):
        _open_as_bob(_seal(), pinned=CAROL)


def test_unpinned_sender() -> None:
    with pytest.raises(NotPinnedError):
        open_envelope(
            _seal(),
            recipient="bob#1",
            recipient_key=BOB.encryption_key,
            pinned_key=lambda _s: None,
            replay=MemoryReplayStore(),
            now=NOW,
        )


def test_pin_lookup_gets_the_sender() -> None:
    asked: list[str] = []

    def pinned(sender: str) -> Any:
        asked.append(sender)
        return ALICE.signing_key.public_key()

    open_envelope(
        _seal(),
        recipient="bob#1",
        recipient_key=BOB.encryption_key,
        pinned_key=pinned,
        replay=MemoryReplayStore(),
        now=NOW,
    )
    assert asked == ["alice#1"]


@pytest.mark.parametrize("envelope", [None, [], "x", {"v": 1}])
def test_not_an_envelope(envelope: object) -> None:
    with pytest.raises(MalformedError, match=r"^malformed$"):
        _open_as_bob(envelope)


def test_boolean_or_fractional_numbers_are_malformed() -> None:
    envelope = _seal()
    for field, value in [("v", True), ("ts", 1.5), ("ts", "1784131200"), ("id", 1)]:
        with pytest.raises(MalformedError, match=r"^malformed$"):
            _open_as_bob({**envelope, field: value})


@pytest.mark.parametrize(
    ("plaintext", "message"),
    [
        (b'{"text":"\\ud800"}', "invalid UTF-8 body"),
        (b'{"text":"a\xff"}', "invalid UTF-8 body"),
        (b'{"text":"x"', "malformed"),
        (b'{"text":NaN}', "malformed"),
        (b'{"text":Infinity}', "malformed"),
        # Nesting deeper than Python's parser recurses: refused as malformed.
        # (The reference parses it and then refuses "invalid body": the same
        # code, another message, for a plaintext no sender would write.)
        (b'{"text":"x","a":' + b"[" * 10_000 + b"]" * 10_000 + b"}", "malformed"),
        (b'{"text":"x","replyTo":null}', "invalid body"),
        (b'{"text":"x","thread":"01KXK8343R2N5GW62RPZACDFHI"}', "invalid body identifier"),
        (b"\xef\xbb\xbf\xef\xbb\xbf{}", "malformed"),  # one BOM is dropped, not two
    ],
)
def test_plaintext_refusals(plaintext: bytes, message: str) -> None:
    with pytest.raises(MalformedError) as info:
        _open_as_bob(_crafted(plaintext))
    assert str(info.value) == message


def test_duplicate_keys_last_wins() -> None:
    opened = _open_as_bob(_crafted(b'{"text":"first","text":"second"}'))
    assert opened.body == {"text": "second"}


def test_plaintext_limit_is_inclusive() -> None:
    text = "a" * (MAX_PLAINTEXT_BYTES - len(b'{"text":""}'))
    assert len(canonical_bytes({"text": text})) == MAX_PLAINTEXT_BYTES
    assert _open_as_bob(_seal({"text": text})).body["text"] == text
    with pytest.raises(TooLargeError):
        _seal({"text": text + "a"})


def test_low_order_ephemeral_key_is_malformed() -> None:
    envelope = _crafted(b'{"text":"x"}', epk=b64_encode(b"\x00" * 32))
    with pytest.raises(MalformedError):
        _open_as_bob(envelope)


def test_time_window_edges() -> None:
    store = MemoryReplayStore()
    _open_as_bob(_seal(ts=NOW + 300), store)
    _open_as_bob(_seal(id="01KXK8343R2N5GW62RPZACDFHG", ts=NOW - 2_592_000), store)
    with pytest.raises(ExpiredError):
        _open_as_bob(_seal(id="01KXK8343R2N5GW62RPZACDFHH", ts=NOW + 301), store)


def test_replay_binding_and_release(store: ReplayStore) -> None:
    envelope = _seal()
    with pytest.raises(ExpiredError):
        _open_as_bob(envelope, store, now=NOW - 400)
    # The failed open released its claim: the envelope opens once its time comes.
    assert _open_as_bob(envelope, store).body == {"text": "hi"}
    with pytest.raises(ReplayedError, match="duplicate envelope"):
        _open_as_bob(envelope, store)
    other = _seal({"text": "another"})
    with pytest.raises(ReplayedError, match="replay id binding mismatch"):
        _open_as_bob(other, store)


def test_replay_key_ignores_handle_case_and_epoch(store: ReplayStore) -> None:
    # Alice (re-keyed at epoch 2, writing her handle capitalised) reusing an id.
    _open_as_bob(_seal(), store)
    alice2 = Identity(ALICE.peer, ALICE.signing_key, ALICE.encryption_key)
    again = _seal({"text": "hi again"}, sender="Alice#2", signing_key=alice2.signing_key)
    with pytest.raises(ReplayedError, match="mismatch"):
        _open_as_bob(again, store)


def test_envelope_being_opened_is_a_duplicate() -> None:
    store = MemoryReplayStore()
    envelope = _seal()
    assert store.claim("alice", ID, envelope_hash(envelope)) is Binding.NEW
    with pytest.raises(ReplayedError, match="duplicate envelope"):
        _open_as_bob(envelope, store)
    # The other open's claim is untouched by this refusal.
    assert store.claim("alice", ID, envelope_hash(envelope)) is Binding.IN_FLIGHT


def test_failed_commit_releases_the_claim() -> None:
    class Failing(MemoryReplayStore):
        def commit(self, sender: str, envelope_id: str, envelope_hash: str) -> None:
            raise ReplayStoreError("disk full")

    store = Failing()
    envelope = _seal()
    with pytest.raises(ReplayStoreError):
        _open_as_bob(envelope, store)
    # Not delivered, so not bound: the same envelope may come again.
    assert store.claim("alice", ID, envelope_hash(envelope)) is Binding.NEW


def test_seal_draws_ephemeral_key_then_nonce() -> None:
    drawn: list[int] = []

    def rng(n: int) -> bytes:
        drawn.append(n)
        return bytes([len(drawn)]) * n

    a = _seal(rng=rng)
    assert drawn == [32, 12]
    assert base64.b64decode(str(a["n"])) == b"\x02" * 12


def test_json_round_trip_of_the_wire_form() -> None:
    wire = json.dumps(_seal()).encode()
    assert _open_as_bob(json.loads(wire)).body == {"text": "hi"}
