"""Opening a review store from its URL, and what the SQLite and PostgreSQL stores share.

Both stores keep the same columns (``COLUMNS``) in the same order, so a row
converts to a :class:`Review` the same way, and both wake their waiters with
:class:`Waiters`; they differ only in how they hear of a decision made by
another process.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from gateway.review.model import STATUSES, Finding, Review, Status
from gateway.review.store import NotFound, StoreError

if TYPE_CHECKING:
    from gateway.review.store import ReviewStore

COLUMNS = (
    "id",
    "team",
    "digest",
    "direction",
    "source",
    "destination",
    "category",
    "reason",
    "policy_version",
    "excerpt",
    "findings",
    "status",
    "created",
    "decided_by",
    "decided_at",
    "note",
)
COLUMN_LIST = ", ".join(COLUMNS)


def open_store(url: str) -> ReviewStore:
    """The store for ``review.store``, not yet opened.

    ``sqlite:///relative/path`` (relative to the working directory),
    ``sqlite:////absolute/path``, ``postgresql://...`` or ``postgres://...``.
    """
    # Imported here: both implementations import this module.
    if url.startswith("sqlite:///"):
        from gateway.review.sqlite import SQLiteStore

        path = url.removeprefix("sqlite:///")
        if not path or path.endswith("/"):
            raise ValueError("review store URL sqlite:///<path> needs a file path")
        return SQLiteStore(path)
    if url.startswith(("postgresql://", "postgres://")):
        from gateway.review.postgres import PostgresStore

        # `?schema=name` picks the schema the tables live in (default reefgate),
        # so deployments can share a database; the rest goes to asyncpg as is.
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schemas = [value for key, value in query if key == "schema"]
        if not schemas:
            return PostgresStore(url)
        rest = urlencode([(key, value) for key, value in query if key != "schema"])
        return PostgresStore(urlunsplit(parts._replace(query=rest)), schema=schemas[-1])
    # Only the scheme is echoed: the rest of a URL may hold a password.
    given = url.split("://", 1)[0] + "://..." if "://" in url else "a URL without a scheme"
    raise ValueError(f"review store URL must be sqlite:///<path> or postgresql://..., not {given}")


def check_submittable(review: Review) -> None:
    if review.status != "pending" or review.decided_by is not None or review.decided_at is not None:
        raise ValueError(f"only a pending, undecided review can be submitted, not {review.status}")


def check_limit(limit: int) -> None:
    if limit < 0:
        raise ValueError("limit must not be negative")


def to_row(review: Review) -> tuple[object, ...]:
    """The values of ``COLUMNS``, findings as JSON text."""
    findings = json.dumps(
        [{"kind": f.kind, "fingerprint": f.fingerprint, "where": f.where} for f in review.findings]
    )
    return (
        review.id,
        review.team,
        review.digest,
        review.direction,
        review.source,
        review.destination,
        review.category,
        review.reason,
        review.policy_version,
        review.excerpt,
        findings,
        review.status,
        review.created,
        review.decided_by,
        review.decided_at,
        review.note,
    )


def from_row(row: Sequence[Any]) -> Review:
    """A review from the values of ``COLUMNS``; a value the schema forbids is a StoreError."""
    try:
        status = _status(row[11])
        findings = tuple(
            Finding(kind=f["kind"], fingerprint=f["fingerprint"], where=f["where"])
            for f in json.loads(row[10])
        )
        return Review(
            id=row[0],
            team=row[1],
            digest=row[2],
            direction=row[3],
            source=row[4],
            destination=row[5],
            category=row[6],
            reason=row[7],
            policy_version=row[8],
            excerpt=row[9],
            findings=findings,
            status=status,
            created=float(row[12]),
            decided_by=row[13],
            decided_at=None if row[14] is None else float(row[14]),
            note=row[15],
        )
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise StoreError(f"a stored review cannot be read: {exc}") from exc


def _status(value: object) -> Status:
    for status in STATUSES:
        if value == status:
            return status
    raise ValueError(f"unknown status {value!r}")


class Waiters:
    """The `wait` calls in progress, by review id, and what wakes them.

    Each call has its own event, cleared before it reads the review: a wake
    that comes while it reads is kept for the next round, so a decision made
    between the read and the sleep cannot be missed. A wake only means "read
    again"; a spurious one costs a read.
    """

    def __init__(self) -> None:
        self._by_id: dict[str, set[asyncio.Event]] = {}

    def __len__(self) -> int:
        return sum(len(events) for events in self._by_id.values())

    def wake(self, review_id: str) -> None:
        for event in self._by_id.get(review_id, ()):
            event.set()

    def wake_all(self) -> None:
        for events in self._by_id.values():
            for event in events:
                event.set()

    async def wait(
        self,
        review_id: str,
        read: Callable[[str], Awaitable[Review | None]],
        *,
        recheck: float | None = None,
    ) -> Review:
        """Read the review until it is decided, sleeping between reads until woken.

        With ``recheck``, also wake after that many seconds: for a store that
        cannot be told of another process's decisions.
        """
        event = asyncio.Event()
        self._by_id.setdefault(review_id, set()).add(event)
        loop = asyncio.get_running_loop()
        try:
            while True:
                event.clear()
                review = await read(review_id)
                if review is None:
                    raise NotFound(f"no review {review_id}")
                if review.status != "pending":
                    return review
                timer = None if recheck is None else loop.call_later(recheck, event.set)
                try:
                    await event.wait()
                finally:
                    if timer is not None:
                        timer.cancel()
        finally:
            events = self._by_id[review_id]
            events.discard(event)
            if not events:
                del self._by_id[review_id]
