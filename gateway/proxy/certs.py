"""The gateway's certificate authority and the leaf certificates it mints for intercepted hosts.

An agent that trusts ``ca.pem`` accepts the gateway as ``api.openai.com``
inside an intercepted tunnel. The CA key never leaves ``ca-key.pem`` (mode
0600). Leaves share one key pair made at start (as mitmproxy does: minting a
certificate is a signature, making a key is the expensive part), are valid
for their one host name, live ``leaf_validity_hours``, and are kept in a
bounded cache of ready TLS contexts.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from cachetools import LRUCache
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT = "ca.pem"
CA_KEY = "ca-key.pem"
_CA_YEARS = 10
# Minted leaves start this far in the past, for clients whose clocks lag.
_BACKDATE = datetime.timedelta(hours=1)
# A cached leaf is replaced when less than this is left of its life.
_RENEW_BEFORE = datetime.timedelta(hours=1)


class CAError(Exception):
    """The CA files are missing, unreadable or not a CA."""


@dataclass(frozen=True, slots=True)
class CAFiles:
    cert: Path
    key: Path

    @classmethod
    def in_dir(cls, directory: Path) -> CAFiles:
        return cls(directory / CA_CERT, directory / CA_KEY)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write_private(path: Path, data: bytes) -> None:
    # Created with its final mode: the key is never readable by others, not
    # even for the moment between a write and a chmod.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def init_ca(directory: Path) -> CAFiles:
    """Create a new CA in ``directory``; refuses to overwrite one."""
    files = CAFiles.in_dir(directory)
    if files.cert.exists() or files.key.exists():
        raise CAError(f"{directory} already holds a CA ({CA_CERT} or {CA_KEY})")
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "reefgate"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"reefgate CA ({socket.gethostname()})"),
        ]
    )
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=365 * _CA_YEARS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_private(files.key, key_pem)
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return files


def ensure_ca(directory: Path) -> CAFiles:
    """The CA in ``directory``, created on first start when missing."""
    files = CAFiles.in_dir(directory)
    if files.cert.exists() and files.key.exists():
        return files
    try:
        return init_ca(directory)
    except FileExistsError:
        # Another worker made it at the same moment: use theirs.
        return files
    except CAError:
        if files.cert.exists() and files.key.exists():
            return files
        raise


class Authority:
    """The loaded CA, minting leaves for intercepted host names."""

    def __init__(
        self, files: CAFiles, *, validity_hours: float = 24.0, cache_size: int = 1024
    ) -> None:
        try:
            self.cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
            key = serialization.load_pem_private_key(files.key.read_bytes(), password=None)
        except (OSError, ValueError) as exc:
            raise CAError(f"cannot load the CA from {files.cert.parent}: {exc}") from exc
        if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise CAError("the CA key must be an EC or RSA private key")
        constraints = self.cert.extensions.get_extension_for_class(x509.BasicConstraints)
        if not constraints.value.ca:
            raise CAError(f"{files.cert} is not a CA certificate")
        self.files = files
        self._key = key
        self._validity = datetime.timedelta(hours=validity_hours)
        self._leaf_key = ec.generate_private_key(ec.SECP256R1())
        self._leaf_key_pem = self._leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        self._contexts: LRUCache[str, tuple[ssl.SSLContext, datetime.datetime]] = LRUCache(
            maxsize=cache_size
        )
        self._lock = threading.Lock()
        self.minted = 0

    def context(self, host: str) -> ssl.SSLContext:
        """A server TLS context presenting a certificate for ``host``, cached."""
        host = host.lower()
        now = _now()
        with self._lock:
            cached = self._contexts.get(host)
            if cached is not None and cached[1] - now > _RENEW_BEFORE:
                return cached[0]
        cert = self.leaf(host, now)
        ctx = _server_context(
            cert.public_bytes(serialization.Encoding.PEM)
            + self.cert.public_bytes(serialization.Encoding.PEM),
            self._leaf_key_pem,
        )
        with self._lock:
            self._contexts[host] = (ctx, cert.not_valid_after_utc)
            self.minted += 1
        return ctx

    def leaf(self, host: str, now: datetime.datetime | None = None) -> x509.Certificate:
        now = now or _now()
        not_after = min(now + self._validity, self.cert.not_valid_after_utc)
        try:
            san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            san = x509.DNSName(host)
        ca_ski = self.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(self.cert.subject)
            .public_key(self._leaf_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([san]), critical=False)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._leaf_key.public_key()),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )


def _server_context(chain_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    # Inside the tunnel the gateway speaks HTTP/1.1 only.
    ctx.set_alpn_protocols(["http/1.1"])
    # The ssl module loads certificates from files only: a private directory,
    # removed at once.
    with tempfile.TemporaryDirectory(prefix="reefgate-leaf-") as tmp:
        chain, key = Path(tmp) / "chain.pem", Path(tmp) / "key.pem"
        chain.write_bytes(chain_pem)
        _write_private(key, key_pem)
        ctx.load_cert_chain(chain, key)
    return ctx
