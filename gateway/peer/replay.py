"""Replay bindings: each sender's envelope id is bound to the first envelope accepted under it.

An open claims ``(sender, id)`` for the envelope's hash before decrypting,
then commits the claim once the envelope is accepted, or releases it when a
later check refuses the envelope. A committed binding lasts for ever: the same
envelope again is a duplicate, another envelope under the same id a mismatch.

A claim that is neither committed nor released (the process died in between)
is abandoned after ``lease`` seconds and may be claimed again; until then a
second open of the same envelope is told ``IN_FLIGHT``.

Every store passes the same suite (tests/peer/test_replay.py).
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "DEFAULT_LEASE_S",
    "Binding",
    "MemoryReplayStore",
    "ReplayStore",
    "ReplayStoreError",
    "decide",
]

Clock = Callable[[], float]

# Long enough for any single open (milliseconds), short enough that a crash
# does not hold an envelope off for long.
DEFAULT_LEASE_S = 60.0


class Binding(enum.Enum):
    NEW = "new"  # the caller now holds the claim and must commit or release it
    DUPLICATE = "duplicate"  # this envelope was accepted before
    MISMATCH = "mismatch"  # the id is bound (or being claimed) for another envelope
    IN_FLIGHT = "in_flight"  # this envelope is being opened right now


class ReplayStoreError(Exception):
    """The store cannot be used, or a commit no longer holds its claim; fail closed."""


class ReplayStore(Protocol):
    def claim(self, sender: str, envelope_id: str, envelope_hash: str) -> Binding: ...

    def commit(self, sender: str, envelope_id: str, envelope_hash: str) -> None:
        """Bind for ever; raises ReplayStoreError when the claim was lost (lease expired)."""

    def release(self, sender: str, envelope_id: str, envelope_hash: str) -> None:
        """Drop this caller's uncommitted claim; anything else is left alone."""


@dataclass(slots=True)
class _Entry:
    envelope_hash: str
    bound: bool
    claimed_at: float


def decide(
    entry_hash: str | None,
    bound: bool,
    claimed_at: float,
    envelope_hash: str,
    now: float,
    lease: float,
) -> Binding:
    """The outcome of a claim against what a store holds (``entry_hash`` None: nothing)."""
    if entry_hash is None or (not bound and now - claimed_at >= lease):
        return Binding.NEW
    if entry_hash != envelope_hash:
        return Binding.MISMATCH
    return Binding.DUPLICATE if bound else Binding.IN_FLIGHT


class MemoryReplayStore:
    """In one process's memory: for tests, and for a gateway that may forget on restart."""

    def __init__(self, *, lease: float = DEFAULT_LEASE_S, clock: Clock = time.time) -> None:
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()
        self._lease = lease
        self._clock = clock

    def __len__(self) -> int:
        return len(self._entries)

    def claim(self, sender: str, envelope_id: str, envelope_hash: str) -> Binding:
        key = (sender, envelope_id)
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            outcome = (
                Binding.NEW
                if entry is None
                else decide(
                    entry.envelope_hash,
                    entry.bound,
                    entry.claimed_at,
                    envelope_hash,
                    now,
                    self._lease,
                )
            )
            if outcome is Binding.NEW:
                self._entries[key] = _Entry(envelope_hash, False, now)
            return outcome

    def commit(self, sender: str, envelope_id: str, envelope_hash: str) -> None:
        with self._lock:
            entry = self._entries.get((sender, envelope_id))
            if entry is None or entry.envelope_hash != envelope_hash:
                raise ReplayStoreError("the replay claim was lost before commit")
            entry.bound = True

    def release(self, sender: str, envelope_id: str, envelope_hash: str) -> None:
        key = (sender, envelope_id)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and not entry.bound and entry.envelope_hash == envelope_hash:
                del self._entries[key]
