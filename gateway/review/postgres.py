"""The review store on PostgreSQL: for several gateway replicas sharing their reviews.

Durability: a write returns once PostgreSQL has committed it; the store's
connections set ``synchronous_commit = on``, so a server configured to
acknowledge commits before they reach its WAL cannot weaken that.

Uniqueness and decisions hold across replicas by construction: `submit` is an
``INSERT ... ON CONFLICT (digest) DO NOTHING`` followed by a read of the row,
and `decide` an ``UPDATE ... WHERE status = 'pending'``, which the second of
two concurrent deciders finds no longer matching once the first commits.

Decisions are announced with ``NOTIFY`` (payload: the review id) in the same
transaction as the update, so the announcement goes out exactly when the
decision is visible. Each store keeps one connection outside its pool that
``LISTEN``s and wakes the local `wait` calls for that id. If that connection
drops, it is reconnected with backoff, and then every waiter reads its
review again: a decision announced while nobody listened is not lost.

Everything lives in one schema (``reefgate`` unless told otherwise), created
if missing, and the channel is named after it, so stores in different
schemas of one database do not hear each other.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import asyncpg  # type: ignore[import-untyped]

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

log = logging.getLogger("reefgate.review")

# Lower case, so the quoted name is the one psql shows unquoted; short enough
# that the channel name stays under PostgreSQL's 63-byte identifier limit.
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")
_LISTENER_BACKOFF_S = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)


class PostgresStore:
    def __init__(
        self, dsn: str, *, schema: str = "reefgate", pool_size: int = 4, timeout: float = 10.0
    ) -> None:
        """``timeout`` bounds connecting and every statement, so a stuck server fails closed."""
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(f"schema must match {_SCHEMA_NAME.pattern}, not {schema!r}")
        self.schema = schema
        self._dsn = dsn
        self._pool_size = pool_size
        self._timeout = timeout
        self._table = f'"{schema}".reviews'
        self._channel = f"{schema}_review_decided"
        self._submitted_channel = f"{schema}_review_new"
        self._submitted: list[Callable[[str, str], None]] = []
        self._pool: Any = None
        self._listener: Any = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False
        self._waiters = Waiters()

    @property
    def waiting(self) -> int:
        """How many `wait` calls are in progress."""
        return len(self._waiters)

    async def open(self) -> None:
        if self._pool is not None:
            raise StoreError("the review store is already open")
        self._closed = False
        try:
            with self._converted():
                self._pool = await asyncpg.create_pool(
                    self._dsn,
                    min_size=1,
                    max_size=self._pool_size,
                    timeout=self._timeout,
                    command_timeout=self._timeout,
                    server_settings={
                        "synchronous_commit": "on",
                        "application_name": "reefgate-review",
                    },
                )
                await self._create_schema()
                self._listener = await self._listen()
        except BaseException:
            # The error that matters is the one that stopped open.
            with contextlib.suppress(StoreError):
                await self.close()
            raise

    async def close(self) -> None:
        self._closed = True
        reconnecting, self._reconnecting = self._reconnecting, None
        if reconnecting is not None:
            reconnecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reconnecting
        # Read only now: a reconnect that finished as it was cancelled has set it.
        listener, self._listener = self._listener, None
        pool, self._pool = self._pool, None
        try:
            with self._converted():
                if listener is not None:
                    await listener.close(timeout=self._timeout)
                if pool is not None:
                    await pool.close()
        finally:
            # Waiters read again and meet a closed store: they fail, not hang.
            self._waiters.wake_all()

    async def submit(self, review: Review) -> Review:
        check_submittable(review)
        placeholders = ", ".join(f"${i}" for i in range(1, len(COLUMNS) + 1))
        with self._converted():
            pool = self._open_pool()
            async with pool.acquire() as conn, conn.transaction():
                row = await conn.fetchrow(
                    f"INSERT INTO {self._table} ({COLUMN_LIST})"  # noqa: S608
                    f" VALUES ({placeholders})"
                    f" ON CONFLICT (digest) DO NOTHING RETURNING {COLUMN_LIST}",
                    *to_row(review),
                )
                if row is not None:
                    # Delivered with the commit, so every replica learns the digest.
                    await conn.execute(
                        "SELECT pg_notify($1, $2)",
                        self._submitted_channel,
                        f"{review.team}\t{review.digest}",
                    )
            if row is None:
                # A new statement sees the row the conflicting insert committed.
                row = await pool.fetchrow(self._select("digest = $1"), review.digest)
        if row is None:
            raise StoreError(f"review with digest {review.digest} vanished while it was submitted")
        return from_row(row)

    async def by_digest(self, digest: str) -> Review | None:
        return await self._one("digest = $1", digest)

    async def get(self, review_id: str) -> Review | None:
        return await self._one("id = $1", review_id)

    async def list(
        self, *, team: str | None = None, status: Status | None = None, limit: int = 500
    ) -> builtins.list[Review]:
        check_limit(limit)
        where: builtins.list[str] = ["true"]
        args: builtins.list[object] = []
        if team is not None:
            args.append(team)
            where.append(f"team = ${len(args)}")
        if status is not None:
            args.append(status)
            where.append(f"status = ${len(args)}")
        args.append(limit)
        query = self._select(" AND ".join(where))
        query += f" ORDER BY created DESC, seq DESC LIMIT ${len(args)}"
        with self._converted():
            rows = await self._open_pool().fetch(query, *args)
        return [from_row(row) for row in rows]

    async def count_pending(self, team: str) -> int:
        with self._converted():
            count = await self._open_pool().fetchval(
                f"SELECT count(*) FROM {self._table} WHERE team = $1 AND status = 'pending'",  # noqa: S608
                team,
            )
        return int(count)

    async def count_pending_by_team(self) -> dict[str, int]:
        with self._converted():
            rows = await self._open_pool().fetch(
                f"SELECT team, count(*) FROM {self._table} WHERE status = 'pending'"  # noqa: S608
                " GROUP BY team"
            )
        return {str(row[0]): int(row[1]) for row in rows}

    async def decide(
        self, review_id: str, *, approve: bool, reviewer: str, note: str | None = None
    ) -> Review:
        status: Status = "approved" if approve else "denied"
        with self._converted():
            async with self._open_pool().acquire() as conn, conn.transaction():
                row = await conn.fetchrow(
                    f"UPDATE {self._table} SET status = $2, decided_by = $3, decided_at = $4,"  # noqa: S608
                    f" note = $5 WHERE id = $1 AND status = 'pending' RETURNING {COLUMN_LIST}",
                    review_id,
                    status,
                    reviewer,
                    time.time(),
                    note,
                )
                if row is None:
                    current = await conn.fetchrow(self._select("id = $1"), review_id)
                    if current is None:
                        raise NotFound(f"no review {review_id}")
                    raise AlreadyDecided(from_row(current))
                await conn.execute("SELECT pg_notify($1, $2)", self._channel, review_id)
        self._waiters.wake(review_id)
        return from_row(row)

    async def wait(self, review_id: str) -> Review:
        return await self._waiters.wait(review_id, self.get)

    def _open_pool(self) -> Any:
        if self._pool is None:
            raise StoreError("the review store is not open")
        return self._pool

    @contextlib.contextmanager
    def _converted(self) -> Iterator[None]:
        try:
            yield
        except _ERRORS as exc:
            raise StoreError(f"review store (PostgreSQL, schema {self.schema}): {exc}") from exc

    def _select(self, where: str) -> str:
        return f"SELECT {COLUMN_LIST} FROM {self._table} WHERE {where}"  # noqa: S608

    async def _one(self, where: str, value: str) -> Review | None:
        with self._converted():
            row = await self._open_pool().fetchrow(self._select(where), value)
        return None if row is None else from_row(row)

    async def _create_schema(self) -> None:
        async with self._pool.acquire() as conn, conn.transaction():
            # Replicas starting together would race on CREATE ... IF NOT EXISTS,
            # which is not safe against a concurrent creation of the same name.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", self._table)
            # CREATE SCHEMA IF NOT EXISTS needs the right to create schemas even
            # when the schema exists: an administrator may have made it for us.
            if not await conn.fetchval(
                "SELECT true FROM pg_namespace WHERE nspname = $1", self.schema
            ):
                await conn.execute(f'CREATE SCHEMA "{self.schema}"')
            await conn.execute(f"""
                CREATE TABLE IF NOT EXISTS {self._table} (
                    -- Insertion order: breaks ties between reviews created in the same instant.
                    seq bigint GENERATED ALWAYS AS IDENTITY,
                    id text PRIMARY KEY,
                    team text NOT NULL,
                    digest text NOT NULL UNIQUE,
                    direction text NOT NULL,
                    source text NOT NULL,
                    destination text NOT NULL,
                    category text NOT NULL,
                    reason text NOT NULL,
                    policy_version text NOT NULL,
                    excerpt text NOT NULL,
                    findings jsonb NOT NULL,
                    status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
                    -- Unix seconds as the Review holds them: a timestamptz would round
                    -- them to microseconds, and a stored review would differ from itself.
                    created double precision NOT NULL,
                    decided_by text,
                    decided_at double precision,
                    note text,
                    CHECK ((status = 'pending') = (decided_by IS NULL AND decided_at IS NULL))
                );
                CREATE INDEX IF NOT EXISTS reviews_team_status
                    ON {self._table} (team, status, created);
                CREATE INDEX IF NOT EXISTS reviews_status ON {self._table} (status, created);
            """)

    async def _listen(self) -> Any:
        conn = await asyncpg.connect(
            self._dsn,
            timeout=self._timeout,
            server_settings={"application_name": "reefgate-review-listener"},
        )
        try:
            await conn.add_listener(self._channel, self._on_notify)
            await conn.add_listener(self._submitted_channel, self._on_submitted)
        except BaseException:
            conn.terminate()
            raise
        conn.add_termination_listener(self._on_listener_lost)
        return conn

    def _on_notify(self, _conn: object, _pid: int, _channel: str, review_id: str) -> None:
        self._waiters.wake(review_id)

    def on_submit(self, callback: Callable[[str, str], None]) -> None:
        self._submitted.append(callback)

    def _on_submitted(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        team, _, digest = payload.partition("\t")
        for callback in self._submitted:
            callback(team, digest)

    def _on_listener_lost(self, _conn: object) -> None:
        if self._closed or self._reconnecting is not None:
            return
        log.warning("review store: the LISTEN connection dropped; reconnecting")
        self._listener = None
        self._reconnecting = asyncio.get_running_loop().create_task(self._relisten())

    async def _relisten(self) -> None:
        attempt = 0
        while True:
            try:
                listener = await self._listen()
            # Anything: a task that died here would leave waits deaf to other replicas.
            except Exception as exc:
                delay = _LISTENER_BACKOFF_S[min(attempt, len(_LISTENER_BACKOFF_S) - 1)]
                attempt += 1
                log.warning(
                    "review store: LISTEN reconnect failed (%s); next try in %ss", exc, delay
                )
                await asyncio.sleep(delay)
                continue
            break
        self._listener = listener
        self._reconnecting = None
        log.info("review store: LISTEN connection back after %d failed attempts", attempt)
        # A decision announced while nobody listened was not heard: read again.
        self._waiters.wake_all()
