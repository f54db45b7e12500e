"""The floor: the secret scan on a text and on its unwrapped views, and what must pass.

Secret-looking values are assembled at run time from split prefixes, so this
file holds no literal that a scanner would take for a credential.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import struct
import uuid
import zlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization as ser

from bench import _corpus as corpus
from gateway.guard import floor
from gateway.guard.detectors import secrets, unwrap
from tests.guard.test_unwrap import ED_KEY, NOT_KEYS, RSA_KEY
from tests.vectors import corpora

_RNG = random.Random(20240612)
B62 = string.ascii_letters + string.digits
GITHUB = "gh" + "p_" + "".join(_RNG.choice(B62) for _ in range(36))


def b64(raw: bytes | str) -> str:
    return base64.b64encode(raw.encode() if isinstance(raw, str) else raw).decode()


def test_find_is_the_scan_on_plain_text() -> None:
    text = f"push with {GITHUB} please"
    assert floor.find(text) == [(f.kind, text[f.start : f.end]) for f in secrets.scan(text)]
    assert floor.find(text) == [("github_token", GITHUB)]


def test_find_reports_the_decoded_value() -> None:
    assert floor.find(f"see {b64(GITHUB)}") == [("github_token", GITHUB)]


def test_holds_secret() -> None:
    assert floor.holds_secret(GITHUB)
    assert floor.holds_secret("%" + "%".join(f"{b:02x}" for b in GITHUB.encode()))
    assert floor.holds_secret("\u200b".join(GITHUB))
    assert floor.holds_secret("/v1/files/" + "".join(f"%{b:02X}" for b in GITHUB.encode()))
    assert not floor.holds_secret("/v1/chat/completions")
    assert not floor.holds_secret("gpt-4o-mini")


def test_holds_secret_when_the_scan_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str) -> list[object]:
        raise RuntimeError("scan failed")

    monkeypatch.setattr(secrets, "scan", broken)
    assert floor.holds_secret("/v1/models")


def test_holds_secret_when_unwrapping_goes_too_deep() -> None:
    text = "nothing secret in this text"
    for _ in range(unwrap.MAX_DEPTH + 1):
        text = b64(text)
    with pytest.raises(unwrap.UnwrapLimit):
        floor.find(text)
    assert floor.holds_secret(text)


# ---------------------------------------------------------------------------
# What must pass
# ---------------------------------------------------------------------------


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\0" + random.Random(y).randbytes(width * 3) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _pem(label: str, der: bytes) -> str:
    body = b64(der)
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----\n"


CONFIG = {
    "service": "billing",
    "replicas": 3,
    "database": {"host": "db.internal", "port": 5432, "password": "${DB_PASSWORD}"},
    "features": ["search", "export"],
    "timeout_ms": 2500,
}
RNG = random.Random(5)
CLEAN: dict[str, str] = {
    "commit ids": "\n".join(
        f"commit {hashlib.sha1(str(i).encode()).hexdigest()}\nAuthor: dev\n\n    fix {i}"
        for i in range(20)
    ),
    "sha256 digests": "\n".join(
        f"{hashlib.sha256(str(i).encode()).hexdigest()}  dist/pkg-{i}.tar.gz" for i in range(20)
    ),
    "uuids": " ".join(str(uuid.UUID(int=RNG.getrandbits(128))) for _ in range(30)),
    "base64 image": "![chart](data:image/png;base64," + b64(_png(32, 32)) + ")",
    "base64 image wrapped": "\n".join(
        b64(_png(24, 24))[i : i + 76] for i in range(0, len(b64(_png(24, 24))), 76)
    ),
    "base64 JSON config": "config: " + b64(json.dumps(CONFIG)),
    "base64 JSON config, URL-safe": base64.urlsafe_b64encode(json.dumps(CONFIG).encode())
    .decode()
    .rstrip("="),
    "public key PEM": RSA_KEY.public_key()
    .public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)
    .decode(),
    "public key body": "\n".join(
        _pem("PUBLIC KEY", NOT_KEYS["SubjectPublicKeyInfo"]).splitlines()[1:-1]
    ),
    "OpenSSH public key": ED_KEY.public_key()
    .public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)
    .decode(),
    "certificate PEM": _pem("CERTIFICATE", NOT_KEYS["certificate"]),
    "certificate body in JSON": json.dumps(
        {"cert": "".join(_pem("CERTIFICATE", NOT_KEYS["certificate"]).splitlines()[1:-1])}
    ),
    "percent-encoded URL": "GET /search?q=caf%C3%A9%20au%20lait&page=2&sort=desc%2Cname HTTP/1.1",
    "HTML with entities": "<p>Fish &amp; chips &mdash; &#8220;tasty&#8221; &lt;3 &#x2764;</p>",
    "escapes in code": 'print("caf\\u00e9 \\x41\\x42\\x43\\n")  # \\u2014 done',
    "C byte array": "uint8_t lut[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};",
    "hex dump of a hash": hashlib.sha512(b"x").hexdigest().upper(),
    "JWT-free base64 of prose": b64("The quick brown fox jumps over the lazy dog. " * 4),
    "other scripts": "Пароль не нужен. Ο κωδικός είναι στο αρχείο. パスワードは不要です。 café ✅",
}


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_text_passes(name: str) -> None:
    assert floor.find(CLEAN[name]) == []


def test_bench_corpora_find_what_the_scan_finds() -> None:
    rng = random.Random(corpus.SEED)
    texts = [corpus.clean_text(200_000), corpus.prose(rng, 200), corpus.code(rng)]
    texts += corpus.message_texts(corpus.conversation(random.Random(3), 200_000))
    dirty, _ = corpus.with_secrets(corpus.clean_text(100_000), 8_000)
    texts.append(dirty)
    for text in texts:
        assert floor.find(text) == [(f.kind, text[f.start : f.end]) for f in secrets.scan(text)]


def _rows(path: Path) -> list[dict[str, str]]:
    # split("\n"), not splitlines(): rows hold U+2028 and friends inside strings.
    return [json.loads(line) for line in path.read_text("utf-8").split("\n") if line.strip()]


def test_labelled_corpora_gain_no_false_positive() -> None:
    # Every text of the secret and injection corpora: the floor flags a negative
    # only where the scan alone does, and misses no positive the scan finds.
    files = sorted(corpora().glob("*.jsonl"))
    assert files, f"no corpora under {corpora()}"
    checked = 0
    for path in files:
        for row in _rows(path):
            text = row["text"]
            by_scan, by_floor = bool(secrets.scan(text)), bool(floor.find(text))
            if row.get("label") == "negative":
                assert by_floor <= by_scan, (path.name, text[:80])
            else:
                assert by_floor >= by_scan, (path.name, text[:80])
            checked += 1
    assert checked > 1000


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("/v1/files/file-abc123", True),
        ("application/json", True),
        (f"/v1/files/{GITHUB}", False),
        ("/v1/files/" + GITHUB.replace("_", "%5F"), False),
    ],
)
def test_shown_replaces_what_may_not_be_echoed(text: str, kept: bool) -> None:
    assert floor.shown(text) == (text if kept else floor.REDACTED)


def test_shown_redacts_what_it_cannot_check(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str) -> list[object]:
        raise RuntimeError("scanner broke")

    monkeypatch.setattr(secrets, "scan", broken)
    assert floor.shown("/v1/models") == floor.REDACTED
