"""The per-deployment fingerprint key: HMAC fingerprints, a 0600 key file made at first start."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from gateway.config.models import Audit
from gateway.guard.findings import Fingerprinter
from gateway.observe.audit import AuditLogError, fingerprint_key

SECRET = "Xq7!Lm2pR9vT#k4"


def test_key_file_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    settings = Audit(path=tmp_path / "logs" / "audit.jsonl")
    first = fingerprint_key(settings, {})
    key_file = tmp_path / "logs" / "fingerprint.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(first) == 32
    # A restart reads the same key, so fingerprints stay comparable.
    assert fingerprint_key(settings, {}) == first


def test_fingerprint_is_keyed_not_a_plain_hash(tmp_path: Path) -> None:
    a = Fingerprinter(fingerprint_key(Audit(path=tmp_path / "a" / "audit.jsonl"), {}))
    b = Fingerprinter(fingerprint_key(Audit(path=tmp_path / "b" / "audit.jsonl"), {}))
    plain = hashlib.sha256(SECRET.encode()).hexdigest()
    assert a(SECRET) != plain[:16]
    assert a(SECRET) == a(SECRET)
    # Another deployment's key gives another fingerprint: guesses cannot be tested offline.
    assert a(SECRET) != b(SECRET)
    assert len(a(SECRET)) == 16


def test_key_from_the_environment(tmp_path: Path) -> None:
    settings = Audit(path=tmp_path / "audit.jsonl", fingerprint_key_env="FP_KEY")
    assert fingerprint_key(settings, {"FP_KEY": "k" * 40}) == b"k" * 40
    assert not (tmp_path / "fingerprint.key").exists()
    with pytest.raises(AuditLogError):
        fingerprint_key(settings, {})


def test_short_key_file_is_refused(tmp_path: Path) -> None:
    key_file = tmp_path / "short.key"
    key_file.write_text("abcd\n")
    settings = Audit(path=tmp_path / "audit.jsonl", fingerprint_key_file=key_file)
    with pytest.raises(AuditLogError):
        fingerprint_key(settings, {})


def test_fingerprinter_refuses_a_short_key() -> None:
    with pytest.raises(ValueError, match="at least"):
        Fingerprinter(b"short")
