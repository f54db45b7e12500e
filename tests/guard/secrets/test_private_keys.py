"""Private keys in the wrappings agents paste them in, and what must stay clean."""

from __future__ import annotations

import base64
import json
import random

import pytest

from gateway.guard.detectors.secrets import scan

_R = random.Random(3)
_LINES = [base64.b64encode(_R.randbytes(48)).decode() for _ in range(6)]


def pem(label: str) -> str:
    return f"-----BEGIN {label}-----\n" + "\n".join(_LINES) + f"\n-----END {label}-----\n"


def _prefixed(prefix: str, text: str) -> str:
    return "\n".join(prefix.format(i=i) + line for i, line in enumerate(text.splitlines()))


KEYS = {
    "json string": json.dumps({"key": pem("RSA PRIVATE KEY")}),
    "json in json": json.dumps(json.dumps({"k": pem("RSA PRIVATE KEY")})),
    "concatenated with \\n": 'key = "-----BEGIN RSA PRIVATE KEY-----\\n" +\n'
    + "".join(f'    "{line}\\n" +\n' for line in _LINES)
    + '    "-----END RSA PRIVATE KEY-----"',
    "concatenated": 'key = "-----BEGIN RSA PRIVATE KEY-----" +\n'
    + "".join(f'    "{line}" +\n' for line in _LINES)
    + '    "-----END RSA PRIVATE KEY-----"',
    "array joined": 'const key = [\n  "-----BEGIN RSA PRIVATE KEY-----",\n'
    + "".join(f'  "{line}",\n' for line in _LINES)
    + '  "-----END RSA PRIVATE KEY-----",\n].join("\\n");',
    "log timestamps": _prefixed("2024-05-01T10:00:0{i}Z INFO ", pem("RSA PRIVATE KEY")),
    "build steps": _prefixed("#12 0.{i}34 ", pem("OPENSSH PRIVATE KEY")),
    "compose logs": _prefixed("web-1  | ", pem("EC PRIVATE KEY")),
    "yaml block": "tls.key: |\n" + _prefixed("  ", pem("RSA PRIVATE KEY")),
    "no footer": "-----BEGIN PRIVATE KEY-----\n" + "\n".join(_LINES[:3]) + "\n",
    "DSA": pem("DSA PRIVATE KEY"),
    "ENCRYPTED": pem("ENCRYPTED PRIVATE KEY"),
    "PGP": pem("PGP PRIVATE KEY BLOCK"),
    "ML-DSA": pem("ML-DSA-65 PRIVATE KEY"),
    "ML-KEM": pem("ML-KEM-768 PRIVATE KEY"),
    "SLH-DSA": pem("SLH-DSA-SHA2-128S PRIVATE KEY"),
    "PuTTY v2": "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key\n"
    f"Public-Lines: 1\n{_LINES[0]}\nPrivate-Lines: 2\n{_LINES[1]}\n{_LINES[2]}\n"
    "Private-MAC: " + "cd34" * 10 + "\n",
}

NOT_KEYS = {
    "public key": pem("PUBLIC KEY"),
    "certificate": pem("CERTIFICATE"),
    "elided": "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
    "placeholder": "-----BEGIN PRIVATE KEY-----\n<your key here>\n-----END PRIVATE KEY-----",
    "log without key": _prefixed(
        "2024-05-01T10:00:0{i}Z INFO ",
        "-----BEGIN RSA PRIVATE KEY-----\nloading key from /etc/ssl/private/server.key now\n",
    ),
    "PuTTY public only": "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"
    f"Comment: k\nPublic-Lines: 1\n{_LINES[0]}\n",
}


@pytest.mark.parametrize("name", sorted(KEYS))
def test_private_key_in_any_wrapping(name: str) -> None:
    kinds = {f.kind for f in scan(KEYS[name])}
    assert "private_key" in kinds


@pytest.mark.parametrize("name", sorted(NOT_KEYS))
def test_not_a_private_key(name: str) -> None:
    assert "private_key" not in {f.kind for f in scan(NOT_KEYS[name])}
