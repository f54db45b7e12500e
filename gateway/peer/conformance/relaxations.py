"""Where reefgate's floor allows, on purpose, a text the reference's floor denies.

The reference denies any long token whose Shannon entropy is high
(``high_entropy_token``); it cannot tell a digest, a commit id or a public key
from a credential. reefgate's secret detectors leave those alone by design
(see `gateway.guard.detectors.secrets`: "hashes and commit ids, ... public
keys and certificates"), because a deny there cannot be overridden and would
block ordinary engineering talk.

Each relaxation is a pattern class with its reason. A checks.json case is a
documented relaxation only when all of these hold, otherwise it fails:

* the reference's only finding is its entropy rule (never a concrete secret
  format, never invalid UTF-8 or size);
* the text holds a match of a class;
* once every class match is cut out, no token long enough for the entropy
  rule is left, so the class explains the whole deny.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["RELAXABLE_FINDINGS", "RELAXATIONS", "Relaxation", "explain"]


@dataclass(frozen=True, slots=True)
class Relaxation:
    name: str
    pattern: re.Pattern[str]
    reason: str


RELAXABLE_FINDINGS = frozenset({"high_entropy_token"})

RELAXATIONS: tuple[Relaxation, ...] = (
    Relaxation(
        "commit_url",
        re.compile(
            r"https?://[^\s/]+/[^\s/]+/[^\s/]+/(?:commit|commits|blob|tree)/[0-9a-fA-F]{40}"
            r"(?![0-9A-Za-z])",
            re.ASCII,
        ),
        "a repository URL naming a commit: the 40-hex id is a public object name, not a "
        "credential (reefgate leaves commit ids and URLs without credentials alone)",
    ),
    Relaxation(
        "public_key",
        re.compile(
            r"-----BEGIN (?:RSA |EC |OPENSSH )?PUBLIC KEY-----[A-Za-z0-9+/=\s]*"
            r"-----END (?:RSA |EC |OPENSSH )?PUBLIC KEY-----"
            r"|-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]*-----END CERTIFICATE-----"
            r"|\bssh-(?:rsa|ed25519|ecdsa-sha2-nistp(?:256|384|521)) AAAA[A-Za-z0-9+/]+=*",
            re.ASCII,
        ),
        "public key material (PEM public key, certificate, SSH public key) is meant to be "
        "shared; its base64 body is high-entropy but discloses nothing",
    ),
    Relaxation(
        "hex_digest",
        re.compile(
            r"(?<![0-9A-Za-z_])"
            r"(?:[0-9a-f]{64}|[0-9a-f]{40}|[0-9a-f]{32}|[0-9A-F]{64}|[0-9A-F]{40}|[0-9A-F]{32})"
            r"(?![0-9A-Za-z_])",
        ),
        "a bare run of 32, 40 or 64 hex digits in one case is how digests and object ids "
        "are written (MD5, SHA-1 and git, SHA-256); reefgate denies such hex only where the "
        "context makes it a credential (a secret-named assignment, a known token format)",
    ),
)

# What the entropy rule could still flag once the class matches are cut out.
_LEFTOVER = re.compile(r"[A-Za-z0-9+/=_-]{20,}", re.ASCII)


def explain(text: str, reference_findings: Sequence[str]) -> Relaxation | None:
    """The relaxation that accounts for the reference's deny of ``text``, if one does."""
    if not reference_findings or not set(reference_findings) <= RELAXABLE_FINDINGS:
        return None
    matched = [r for r in RELAXATIONS if r.pattern.search(text)]
    if not matched:
        return None
    rest = text
    for relaxation in matched:
        rest = relaxation.pattern.sub(" ", rest)
    if _LEFTOVER.search(rest):
        return None
    return matched[0]
