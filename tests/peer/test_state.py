from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.cli import main
from gateway.config.models import GatewayConfig
from gateway.peer.identity import generate_identity
from gateway.peer.state import StateError, add_peer, init_identity, load_identity, load_pins


def test_init_writes_private_keys_0600_and_public_identity(tmp_path: Path) -> None:
    state = tmp_path / "reef"
    public = init_identity(state, "alice")
    assert str(public.peer) == "alice#1"
    for name in ("ed25519.key", "x25519.key", "audit.key"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600
    info = json.loads((state / "identity.json").read_text())
    assert info["peer"] == "alice#1"
    assert info["fingerprint"] == public.fingerprint
    assert load_identity(state).public == public
    with pytest.raises(StateError):
        init_identity(state, "alice")


def test_cli_init_and_peer_add(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "reef"
    assert main(["reef", "init", "--handle", "alice", "--state-dir", str(state)]) == 0
    out = capsys.readouterr().out
    assert "identity: alice#1" in out and "fingerprint: " in out
    bob = generate_identity("bob").public.to_dict()
    # A base64url key may start with "-": written as --opt=value it is never
    # taken for an option.
    argv = ["reef", "peer", "add", "bob#1", f"--ed25519={bob['ed25519']}"]
    assert main([*argv, f"--x25519={bob['x25519']}", "--state-dir", str(state)]) == 0
    assert "pinned bob#1" in capsys.readouterr().out
    pins = load_pins(state, {})
    assert pins.get("BOB#1") is not None
    assert pins.get("bob#2") is None and pins.get("carol#1") is None
    assert main([*argv, "--x25519=not-a-key", "--state-dir", str(state)]) == 2
    capsys.readouterr()
    assert main(["reef", "show", "--state-dir", str(state)]) == 0
    out = capsys.readouterr().out
    assert "identity: alice#1" in out and "pinned peers: 1" in out and "bob#1" in out


def test_yaml_pins_join_the_peers_file(tmp_path: Path) -> None:
    bob = generate_identity("bob").public.to_dict()
    carol = generate_identity("carol").public.to_dict()
    add_peer(tmp_path, "bob#1", bob["ed25519"], bob["x25519"])
    config = GatewayConfig.model_validate(
        {
            "peer": {
                "reef": {
                    "handle": "alice",
                    "state_dir": str(tmp_path),
                    "peers": {"carol#1": {"ed25519": carol["ed25519"], "x25519": carol["x25519"]}},
                }
            }
        }
    )
    yaml_pins = {k: v.model_dump() for k, v in config.peer.reef.peers.items()}
    pins = load_pins(config.peer.reef.state_dir, yaml_pins)
    assert len(pins) == 2 and pins.get("carol#1") is not None


def test_config_rejects_bad_peer_names() -> None:
    with pytest.raises(ValidationError):
        GatewayConfig.model_validate(
            {"peer": {"reef": {"peers": {"bob": {"ed25519": "A" * 43, "x25519": "A" * 43}}}}}
        )
    with pytest.raises(ValidationError):
        GatewayConfig.model_validate({"peer": {"reef": {"relay_url": "ftp://x"}}})
