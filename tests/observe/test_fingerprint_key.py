"""The per-deployment fingerprint key: HMAC fingerprints, a 0600 key file made at first start."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from gateway.config.models import Audit
from gateway.guard.findings import Fingerprinter
from gateway.observe.audit import AuditLogError, fingerprint_key, worker_path

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


def test_processes_starting_together_read_one_whole_key(tmp_path: Path) -> None:
    """`serve --workers N`: each worker may be the first to look for the key file."""
    from concurrent.futures import ThreadPoolExecutor

    settings = Audit(path=tmp_path / "var" / "audit.jsonl")
    with ThreadPoolExecutor(max_workers=8) as pool:
        keys = list(pool.map(lambda _: fingerprint_key(settings, {}), range(32)))
    assert len(set(keys)) == 1 and len(keys[0]) == 32
    # Nothing but the key is left beside the log.
    assert [p.name for p in (tmp_path / "var").iterdir()] == ["fingerprint.key"]


def test_each_worker_writes_its_own_chain_beside_the_configured_one() -> None:
    path = Path("var/audit.jsonl")
    assert worker_path(path, 0) == path
    assert worker_path(path, 1) == Path("var/audit.w1.jsonl")
    assert worker_path(path, 12) == Path("var/audit.w12.jsonl")
    assert worker_path(Path("/log/audit"), 2) == Path("/log/audit.w2")
