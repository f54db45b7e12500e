"""The review store on one SQLite file: the default, for a gateway on one machine.

Durability: WAL journal with ``synchronous=FULL``, so every commit is fsynced
before `submit` or `decide` returns. ``NORMAL`` would already survive a killed
process (the WAL is in the OS page cache), but not a power cut or kernel crash;
reviews arrive at human pace, so the extra fsync per write costs nothing that
matters.

sqlite3 blocks, so every call runs on one worker thread owned by the store:
the connection is made, used and closed on that thread only, and the event
loop never waits on the disk.

Several processes may share the file (SQLite locks it; the UNIQUE digest keeps
one review per digest across them), but SQLite cannot notify another process
of a commit: a `wait` is woken at once by a `decide` of the same store object,
and otherwise re-reads its review every ``recheck_interval`` seconds (1 s by
default). Several gateway replicas should use PostgreSQL, which notifies.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from gateway.review.model import Review, Status
from gateway.review.store import AlreadyDecided, NotFound, StoreError
from gateway.review.stores import (
    COLUMN_LIST,
    COLUMNS,
    Waiters,
    check_limit,
    check_submittable,
    from_row,
    to_row,
)

T = TypeVar("T")

# How long a write waits for another process's write lock before failing.
BUSY_TIMEOUT_S = 5.0

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS reviews (
        -- Insertion order: breaks ties between reviews created in the same instant.
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        team TEXT NOT NULL,
        digest TEXT NOT NULL UNIQUE,
        direction TEXT NOT NULL,
        source TEXT NOT NULL,
        destination TEXT NOT NULL,
        category TEXT NOT NULL,
        reason TEXT NOT NULL,
        policy_version TEXT NOT NULL,
        excerpt TEXT NOT NULL,
        findings TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
        created REAL NOT NULL,
        decided_by TEXT,
        decided_at REAL,
        note TEXT,
        CHECK ((status = 'pending') = (decided_by IS NULL AND decided_at IS NULL))
    )
    """,
    "CREATE INDEX IF NOT EXISTS reviews_team_status ON reviews (team, status, created)",
    "CREATE INDEX IF NOT EXISTS reviews_status ON reviews (status, created)",
)
_INSERT = (
    f"INSERT INTO reviews ({COLUMN_LIST}) VALUES ({', '.join('?' * len(COLUMNS))})"  # noqa: S608
    " ON CONFLICT (digest) DO NOTHING"
)


class SQLiteStore:
    def __init__(self, path: str | os.PathLike[str], *, recheck_interval: float = 1.0) -> None:
        self.path = Path(path)
        self._recheck = recheck_interval
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._waiters = Waiters()
        self._submitted: list[Callable[[str, str], None]] = []

    @property
    def waiting(self) -> int:
        """How many `wait` calls are in progress."""
        return len(self._waiters)

    async def open(self) -> None:
        if self._executor is not None:
            raise StoreError("the review store is already open")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reefgate-sqlite")
        try:
            self._conn = await self._call(_connect, self.path)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise

    async def close(self) -> None:
        executor, conn = self._executor, self._conn
        self._executor = self._conn = None
        if executor is None:
            return
        try:
            if conn is not None:
                await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        except sqlite3.Error as exc:
            raise StoreError(f"review store {self.path}: {exc}") from exc
        finally:
            # Every job was queued before the close job, so the thread is idle.
            executor.shutdown(wait=True)
            # Waiters read again and meet a closed store: they fail, not hang.
            self._waiters.wake_all()

    async def submit(self, review: Review) -> Review:
        check_submittable(review)
        stored: Review = await self._run(_submit, to_row(review), review.digest)
        if stored.id == review.id:
            # Other processes on the file are not told: several replicas want PostgreSQL.
            for callback in self._submitted:
                callback(stored.team, stored.digest)
        return stored

    def on_submit(self, callback: Callable[[str, str], None]) -> None:
        self._submitted.append(callback)

    async def by_digest(self, digest: str) -> Review | None:
        return await self._run(_select_one, "digest", digest)

    async def get(self, review_id: str) -> Review | None:
        return await self._run(_select_one, "id", review_id)

    async def list(
        self, *, team: str | None = None, status: Status | None = None, limit: int = 500
    ) -> builtins.list[Review]:
        check_limit(limit)
        return await self._run(_select_many, team, status, limit)

    async def count_pending(self, team: str) -> int:
        return await self._run(_count_pending, team)

    async def count_pending_by_team(self) -> dict[str, int]:
        return await self._run(_count_pending_by_team)

    async def decide(
        self, review_id: str, *, approve: bool, reviewer: str, note: str | None = None
    ) -> Review:
        status: Status = "approved" if approve else "denied"
        review = await self._run(_decide, review_id, status, reviewer, time.time(), note)
        self._waiters.wake(review_id)
        return review

    async def wait(self, review_id: str) -> Review:
        return await self._waiters.wait(review_id, self.get, recheck=self._recheck)

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(connection, *args)`` on the worker thread."""
        if self._conn is None:
            raise StoreError("the review store is not open")
        return await self._call(fn, self._conn, *args)

    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        if self._executor is None:
            raise StoreError("the review store is not open")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"review store {self.path}: {exc}") from exc


# Everything below runs on the store's worker thread.


def _connect(path: Path) -> sqlite3.Connection:
    # The shipped default lives under var/, which a fresh checkout lacks.
    path.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: transactions are the explicit BEGIN IMMEDIATE below.
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        with _write(conn):
            for statement in _SCHEMA:
                conn.execute(statement)
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def _write(conn: sqlite3.Connection) -> Iterator[None]:
    # IMMEDIATE takes the write lock up front: a read-then-write transaction
    # that had to upgrade its lock could fail with SQLITE_BUSY instead of waiting.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _select_one(conn: sqlite3.Connection, column: str, value: str) -> Review | None:
    row = conn.execute(
        f"SELECT {COLUMN_LIST} FROM reviews WHERE {column} = ?",  # noqa: S608 (fixed names)
        (value,),
    ).fetchone()
    return None if row is None else from_row(row)


def _submit(conn: sqlite3.Connection, row: tuple[object, ...], digest: str) -> Review:
    with _write(conn):
        conn.execute(_INSERT, row)
        stored = _select_one(conn, "digest", digest)
    if stored is None:
        raise StoreError(f"review with digest {digest} vanished while it was submitted")
    return stored


def _select_many(
    conn: sqlite3.Connection, team: str | None, status: Status | None, limit: int
) -> list[Review]:
    where: list[str] = ["1"]
    args: list[object] = []
    if team is not None:
        where.append("team = ?")
        args.append(team)
    if status is not None:
        where.append("status = ?")
        args.append(status)
    rows = conn.execute(
        f"SELECT {COLUMN_LIST} FROM reviews WHERE {' AND '.join(where)}"  # noqa: S608
        " ORDER BY created DESC, seq DESC LIMIT ?",
        (*args, limit),
    ).fetchall()
    return [from_row(row) for row in rows]


def _count_pending(conn: sqlite3.Connection, team: str) -> int:
    (count,) = conn.execute(
        "SELECT count(*) FROM reviews WHERE team = ? AND status = 'pending'", (team,)
    ).fetchone()
    return int(count)


def _count_pending_by_team(conn: sqlite3.Connection) -> dict[str, int]:
    rows = conn.execute(
        "SELECT team, count(*) FROM reviews WHERE status = 'pending' GROUP BY team"
    ).fetchall()
    return {str(team): int(count) for team, count in rows}


def _decide(
    conn: sqlite3.Connection,
    review_id: str,
    status: Status,
    reviewer: str,
    at: float,
    note: str | None,
) -> Review:
    with _write(conn):
        updated = conn.execute(
            "UPDATE reviews SET status = ?, decided_by = ?, decided_at = ?, note = ?"
            " WHERE id = ? AND status = 'pending'",
            (status, reviewer, at, note, review_id),
        ).rowcount
        review = _select_one(conn, "id", review_id)
    if review is None:
        raise NotFound(f"no review {review_id}")
    if not updated:
        raise AlreadyDecided(review)
    return review
