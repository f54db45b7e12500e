"""The deterministic floor for a peer message: readable, within size, and free of secrets.

What Reef's ``deterministicChecks`` decides for a message, with reefgate's
floor (`gateway.guard.floor`) for the secret scan: a message that is not
UTF-8 or larger than an envelope can carry is refused before anything reads
it, and any concrete secret the floor finds is a deny nothing can lift.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.guard import floor
from gateway.guard.detectors.unwrap import UnwrapLimit
from gateway.peer.envelope import MAX_PLAINTEXT_BYTES

__all__ = ["INVALID_UTF8", "TOO_LARGE", "UNREADABLE", "Precheck", "precheck"]

INVALID_UTF8 = "invalid_utf8"
TOO_LARGE = "too_large"
# Wrapped deeper than the floor reads through: refused, since it cannot be checked.
UNREADABLE = "unwrap_limit"
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class Precheck:
    allowed: bool
    findings: tuple[str, ...]  # floor kinds in order of appearance, or one of the codes above
    text: str | None  # the text checked (bytes decoded, BOM dropped); None when unreadable


def precheck(message: str | bytes) -> Precheck:
    if isinstance(message, bytes):
        try:
            text = message.decode("utf-8").removeprefix(_BOM)
        except UnicodeDecodeError:
            return Precheck(False, (INVALID_UTF8,), None)
        size = len(message)
    else:
        try:
            size = len(message.encode("utf-8"))
        except UnicodeEncodeError:
            return Precheck(False, (INVALID_UTF8,), None)
        text = message
    if size > MAX_PLAINTEXT_BYTES:
        return Precheck(False, (TOO_LARGE,), text)
    try:
        kinds = tuple(dict.fromkeys(kind for kind, _ in floor.find(text)))
    except UnwrapLimit:
        return Precheck(False, (UNREADABLE,), text)
    return Precheck(not kinds, kinds, text)
