"""Fixed identities for tests that are not driven by a vector file."""

from __future__ import annotations

import hashlib

from gateway.peer.identity import Identity, generate_identity


def identity(handle: str, epoch: int = 1) -> Identity:
    """The same keys on every run: drawn from SHA-256 of the handle."""
    stream = iter(
        [
            hashlib.sha256(f"reefgate-tests/{handle}/ed25519".encode()).digest(),
            hashlib.sha256(f"reefgate-tests/{handle}/x25519".encode()).digest(),
        ]
    )
    return generate_identity(handle, epoch, rng=lambda _n: next(stream))


ALICE = identity("alice")
BOB = identity("bob")
CAROL = identity("carol", 2)
