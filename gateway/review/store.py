"""Where reviews live: one protocol, an SQLite and a PostgreSQL implementation.

Every implementation passes the same test suite (tests/review/test_store.py).
What a store must keep:

- A review is durable once `submit` returns: a restart, or a process killed
  right after, loses nothing.
- At most one review per digest, whatever its status: `submit` of a second
  review with a digest the store already has returns the stored one and
  stores nothing (a concurrent submit on another replica included).
- A decision is made once: `decide` moves a review from pending to approved
  or denied and records who and when; deciding it again raises
  `AlreadyDecided`.
- `on_submit` callbacks hear of every review stored for the first time,
  (team, digest), by this process and, where the store can tell (PostgreSQL:
  NOTIFY in the inserting transaction), by other replicas: so a replica
  learns that a digest it has not seen is under review.
- `wait` returns as soon as the review is decided, by this process or by
  another replica sharing the store (PostgreSQL: LISTEN/NOTIFY, no polling
  loop of seconds); the caller bounds it with `asyncio.timeout`, and a
  cancelled wait leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gateway.review.model import Review, Status


class StoreError(Exception):
    """The store cannot be used (unreachable, corrupt); the gateway fails closed."""


class NotFound(StoreError):
    pass


class AlreadyDecided(StoreError):
    def __init__(self, review: Review) -> None:
        super().__init__(f"review {review.id} is already {review.status}")
        self.review = review


class ReviewStore(Protocol):
    async def open(self) -> None:
        """Connect and create the schema if missing."""

    async def close(self) -> None: ...

    async def submit(self, review: Review) -> Review:
        """Store a pending review, or return the one already stored for its digest."""

    async def by_digest(self, digest: str) -> Review | None: ...

    async def get(self, review_id: str) -> Review | None: ...

    async def list(
        self, *, team: str | None = None, status: Status | None = None, limit: int = 500
    ) -> list[Review]:
        """Newest first; ``team`` None lists every team's."""

    async def count_pending(self, team: str) -> int: ...

    async def count_pending_by_team(self) -> dict[str, int]:
        """Pending reviews per team, for every team that has any."""

    async def decide(
        self, review_id: str, *, approve: bool, reviewer: str, note: str | None = None
    ) -> Review:
        """Approve or deny a pending review; raises NotFound or AlreadyDecided."""

    def on_submit(self, callback: Callable[[str, str], None]) -> None:
        """Call ``callback(team, digest)`` for each review stored from now on."""

    async def wait(self, review_id: str) -> Review:
        """The review once it is decided, here or on another replica; raises NotFound."""
