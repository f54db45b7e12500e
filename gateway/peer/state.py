"""The Reef endpoint's state directory: the claw's identity (in custody), pinned peers, audit key.

    state_dir/
      identity.json     public identity {peer, ed25519, x25519, fingerprint}
      ed25519.key       the Ed25519 seed, base64url (mode 0600)
      x25519.key        the X25519 secret, base64url (mode 0600)
      audit.key         the AES-256-GCM key for message text in the audit (mode 0600)
      peers.json        pinned peers {"bob#1": {"ed25519", "x25519"}}
      replay.sqlite3    replay bindings (gateway.peer.replay_sqlite)
      inbox.sqlite3     accepted messages and receipts (gateway.peer.inbox)

Peers are pinned by `reefgate reef peer add` (peers.json) or in YAML
(``peer.reef.peers``); only pinned peers can send to this claw or be sent to.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

from gateway.peer.encoding import b64url_decode, b64url_encode
from gateway.peer.errors import InvalidInput
from gateway.peer.identity import (
    Identity,
    Peer,
    PublicIdentity,
    ed25519_public,
    generate_identity,
    parse_handle_epoch,
    x25519_public,
)

__all__ = [
    "PinnedPeer",
    "Pins",
    "StateError",
    "add_peer",
    "audit_key",
    "init_identity",
    "load_identity",
    "load_pins",
]

IDENTITY = "identity.json"
ED25519_KEY = "ed25519.key"
X25519_KEY = "x25519.key"
AUDIT_KEY = "audit.key"
PEERS = "peers.json"


class StateError(Exception):
    """The state directory is missing something or holds something unusable."""


def _write_secret(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json(path: Path, value: object) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def init_identity(state_dir: Path, handle: str, epoch: int = 1) -> PublicIdentity:
    """A new identity in `state_dir`; refuses to overwrite one."""
    if (state_dir / IDENTITY).exists() or (state_dir / ED25519_KEY).exists():
        raise StateError(f"{state_dir} already holds an identity")
    identity = generate_identity(handle, epoch)
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    secrets = identity.secrets()
    _write_secret(state_dir / ED25519_KEY, secrets["ed25519"].encode("ascii"))
    _write_secret(state_dir / X25519_KEY, secrets["x25519"].encode("ascii"))
    public = identity.public
    _write_json(state_dir / IDENTITY, {**public.to_dict(), "fingerprint": public.fingerprint})
    audit_key(state_dir)
    return public


def load_identity(state_dir: Path) -> Identity:
    try:
        info = json.loads((state_dir / IDENTITY).read_text(encoding="utf-8"))
        secrets = {
            "ed25519": (state_dir / ED25519_KEY).read_text(encoding="ascii").strip(),
            "x25519": (state_dir / X25519_KEY).read_text(encoding="ascii").strip(),
        }
        identity = Identity.from_secrets(str(info["peer"]), secrets)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StateError(
            f"no usable Reef identity in {state_dir} (reefgate reef init --handle H): {exc}"
        ) from exc
    if identity.public.to_dict()["ed25519"] != info.get("ed25519"):
        raise StateError(f"{state_dir}: identity.json does not match ed25519.key")
    return identity


def audit_key(state_dir: Path) -> bytes:
    """The 32-byte key for encrypted audit text, made (mode 0600) on first use."""
    path = state_dir / AUDIT_KEY
    if not path.exists():
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):
            _write_secret(path, os.urandom(32))
    key = path.read_bytes()
    if len(key) != 32:
        raise StateError(f"{path} must hold exactly 32 bytes")
    return key


def _key_text(value: str, kind: str) -> str:
    raw = b64url_decode(value)
    if raw is None or len(raw) != 32:
        raise InvalidInput(f"invalid {kind} key: 32 bytes in base64url without padding")
    return b64url_encode(raw)


def _pin_name(peer: Peer) -> str:
    return f"{peer.handle.lower()}#{peer.epoch}"


def read_peers_file(state_dir: Path) -> dict[str, dict[str, str]]:
    path = state_dir / PEERS
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StateError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise StateError(f"{path} must hold an object")
    return data


def add_peer(state_dir: Path, address: str, ed25519: str, x25519: str) -> PublicIdentity:
    """Pin `address` (handle#epoch) with its keys in state_dir/peers.json."""
    peer = parse_handle_epoch(address)
    keys = {"ed25519": _key_text(ed25519, "ed25519"), "x25519": _key_text(x25519, "x25519")}
    peers = read_peers_file(state_dir)
    peers[str(peer)] = keys
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_json(state_dir / PEERS, peers)
    return PublicIdentity(
        peer, b64url_decode(keys["ed25519"]) or b"", b64url_decode(keys["x25519"]) or b""
    )


@dataclass(frozen=True, slots=True)
class PinnedPeer:
    peer: Peer
    ed25519: Ed25519PublicKey
    x25519: X25519PublicKey

    @property
    def fingerprint(self) -> str:
        return PublicIdentity(
            self.peer, self.ed25519.public_bytes_raw(), self.x25519.public_bytes_raw()
        ).fingerprint


class Pins:
    """Pinned peers by ``handle#epoch`` (handle case-insensitive, epoch exact)."""

    def __init__(self, peers: Mapping[str, Mapping[str, str]]) -> None:
        self._pins: dict[str, PinnedPeer] = {}
        for address, keys in peers.items():
            try:
                peer = parse_handle_epoch(address)
                pinned = PinnedPeer(
                    peer, ed25519_public(keys["ed25519"]), x25519_public(keys["x25519"])
                )
            except (InvalidInput, ValueError, KeyError, TypeError) as exc:
                raise StateError(f"pinned peer {address!r}: {exc}") from exc
            self._pins[_pin_name(peer)] = pinned

    def __len__(self) -> int:
        return len(self._pins)

    def all(self) -> list[PinnedPeer]:
        return sorted(self._pins.values(), key=lambda p: str(p.peer).lower())

    def get(self, address: str) -> PinnedPeer | None:
        try:
            peer = parse_handle_epoch(address)
        except InvalidInput:
            return None
        return self._pins.get(_pin_name(peer))

    def signing_key(self, address: str) -> Ed25519PublicKey | None:
        pinned = self.get(address)
        return pinned.ed25519 if pinned is not None else None


def load_pins(state_dir: Path, configured: Mapping[str, Mapping[str, str]]) -> Pins:
    """The peers pinned in state_dir/peers.json and in YAML (YAML wins on a conflict)."""
    merged: dict[str, Mapping[str, str]] = dict(read_peers_file(state_dir))
    merged.update(configured)
    return Pins(merged)
