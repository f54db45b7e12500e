"""Replay bindings in one SQLite file: they survive restarts, as a binding must.

Durability as the review store: WAL with ``synchronous=FULL``, so a commit is
on disk before `commit` returns and an accepted envelope stays bound after a
power cut. A claim runs in one ``BEGIN IMMEDIATE`` transaction, so two
processes sharing the file cannot both get ``NEW`` for one id.

The calls block on the disk: from the event loop, run them (or the whole
`open_envelope`) in a worker thread. One connection serves every thread,
behind a lock.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from gateway.peer.replay import DEFAULT_LEASE_S, Binding, Clock, ReplayStoreError, decide

__all__ = ["SQLiteReplayStore"]

T = TypeVar("T")

# How long a write waits for another process's write lock before failing.
BUSY_TIMEOUT_S = 5.0

_SCHEMA = """
    CREATE TABLE IF NOT EXISTS replay_bindings (
        sender TEXT NOT NULL,
        envelope_id TEXT NOT NULL,
        envelope_hash TEXT NOT NULL,
        bound INTEGER NOT NULL CHECK (bound IN (0, 1)),
        claimed_at REAL NOT NULL,
        PRIMARY KEY (sender, envelope_id)
    )
"""


class SQLiteReplayStore:
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lease: float = DEFAULT_LEASE_S,
        clock: Clock = time.time,
    ) -> None:
        self.path = Path(path)
        self._lease = lease
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def open(self) -> None:
        if self._conn is not None:
            raise ReplayStoreError("the replay store is already open")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute(_SCHEMA)
            except BaseException:
                conn.close()
                raise
        except (sqlite3.Error, OSError) as exc:
            raise ReplayStoreError(f"replay store {self.path}: {exc}") from exc
        self._conn = conn

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with self._lock:
                conn.close()

    def __enter__(self) -> SQLiteReplayStore:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def claim(self, sender: str, envelope_id: str, envelope_hash: str) -> Binding:
        now = self._clock()

        def run(conn: sqlite3.Connection) -> Binding:
            row = conn.execute(
                "SELECT envelope_hash, bound, claimed_at FROM replay_bindings"
                " WHERE sender = ? AND envelope_id = ?",
                (sender, envelope_id),
            ).fetchone()
            if row is None:
                outcome = Binding.NEW
            else:
                outcome = decide(row[0], bool(row[1]), row[2], envelope_hash, now, self._lease)
            if outcome is Binding.NEW:
                conn.execute(
                    "INSERT OR REPLACE INTO replay_bindings VALUES (?, ?, ?, 0, ?)",
                    (sender, envelope_id, envelope_hash, now),
                )
            return outcome

        return self._transaction(run)

    def commit(self, sender: str, envelope_id: str, envelope_hash: str) -> None:
        def run(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE replay_bindings SET bound = 1"
                " WHERE sender = ? AND envelope_id = ? AND envelope_hash = ?",
                (sender, envelope_id, envelope_hash),
            )
            if cur.rowcount != 1:
                raise ReplayStoreError("the replay claim was lost before commit")

        self._transaction(run)

    def release(self, sender: str, envelope_id: str, envelope_hash: str) -> None:
        def run(conn: sqlite3.Connection) -> None:
            conn.execute(
                "DELETE FROM replay_bindings"
                " WHERE sender = ? AND envelope_id = ? AND envelope_hash = ? AND bound = 0",
                (sender, envelope_id, envelope_hash),
            )

        self._transaction(run)

    def _transaction(self, run: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn
        if conn is None:
            raise ReplayStoreError("the replay store is not open")
        with self._lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = run(conn)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise ReplayStoreError(f"replay store {self.path}: {exc}") from exc
        return result
