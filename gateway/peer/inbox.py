"""The Reef endpoint's mailbox in one SQLite file: accepted messages, receipts, sent envelopes.

* ``inbox``: each accepted message once, keyed by (sender, id), with a cursor
  (``seq``) the agent reads after. A message is stored, with its receipt, in
  one transaction before the replay binding is committed and the relay is
  acked, so a crash anywhere in between ends with the message delivered once
  (the relay redelivers; the second pass finds the stored receipt).
* ``receipts``: the signed receipt for every envelope decided (accepted or
  rejected), so a duplicate gets the same receipt again.
* ``outbox``: every envelope sealed for sending, so the agent resending the
  identical message (after a review approval, or after a relay failure)
  sends that envelope again and never a second one under the same id.

Blocking calls: run them in a worker thread from the event loop.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

__all__ = ["Mailbox"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS inbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        sender TEXT NOT NULL,
        id TEXT NOT NULL,
        peer TEXT NOT NULL,
        ts INTEGER NOT NULL,
        body TEXT NOT NULL,
        received_at REAL NOT NULL,
        UNIQUE (sender, id)
    )""",
    """CREATE TABLE IF NOT EXISTS receipts (
        sender TEXT NOT NULL,
        id TEXT NOT NULL,
        envelope_hash TEXT NOT NULL,
        receipt TEXT NOT NULL,
        PRIMARY KEY (sender, id)
    )""",
    """CREATE TABLE IF NOT EXISTS outbox (
        id TEXT PRIMARY KEY,
        recipient TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        envelope TEXT NOT NULL,
        sent INTEGER NOT NULL DEFAULT 0
    )""",
)


class Mailbox:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        for statement in _SCHEMA:
            self._conn.execute(statement)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def receipt(self, sender: str, envelope_id: str, envelope_hash: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT envelope_hash, receipt FROM receipts WHERE sender = ? AND id = ?",
                (sender, envelope_id),
            ).fetchone()
        if row is None or row[0] != envelope_hash:
            return None
        receipt: dict[str, Any] = json.loads(row[1])
        return receipt

    def decide(
        self,
        sender: str,
        envelope_id: str,
        envelope_hash: str,
        receipt: dict[str, object],
        message: dict[str, object] | None,
    ) -> dict[str, Any]:
        """Store the receipt (and, when accepted, the message) at once; the stored receipt wins."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT receipt FROM receipts WHERE sender = ? AND id = ?",
                    (sender, envelope_id),
                ).fetchone()
                if row is not None:
                    conn.execute("COMMIT")
                    stored: dict[str, Any] = json.loads(row[0])
                    return stored
                conn.execute(
                    "INSERT INTO receipts (sender, id, envelope_hash, receipt) VALUES (?, ?, ?, ?)",
                    (sender, envelope_id, envelope_hash, json.dumps(receipt)),
                )
                if message is not None:
                    conn.execute(
                        "INSERT OR IGNORE INTO inbox (sender, id, peer, ts, body, received_at) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            sender,
                            envelope_id,
                            message["peer"],
                            message["ts"],
                            json.dumps(message["body"]),
                            message["received_at"],
                        ),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return dict(receipt)

    def messages(self, after: int, limit: int = 100) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, id, peer, ts, body, received_at FROM inbox WHERE seq > ? "
                "ORDER BY seq LIMIT ?",
                (after, limit),
            ).fetchall()
        return [
            {
                "cursor": seq,
                "id": envelope_id,
                "from": peer,
                "ts": ts,
                "body": json.loads(body),
                "received_at": received_at,
            }
            for seq, envelope_id, peer, ts, body, received_at in rows
        ]

    def outgoing(self, envelope_id: str) -> tuple[str, str, dict[str, Any], bool] | None:
        """(recipient, body hash, envelope, sent) of an envelope sealed before under this id."""
        with self._lock:
            row = self._conn.execute(
                "SELECT recipient, body_hash, envelope, sent FROM outbox WHERE id = ?",
                (envelope_id,),
            ).fetchone()
        if row is None:
            return None
        return row[0], row[1], json.loads(row[2]), bool(row[3])

    def seal_outgoing(
        self, envelope_id: str, recipient: str, body_hash: str, envelope: dict[str, object]
    ) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO outbox (id, recipient, body_hash, envelope) "
                "VALUES (?, ?, ?, ?)",
                (envelope_id, recipient, body_hash, json.dumps(envelope)),
            )

    def mark_sent(self, envelope_id: str) -> None:
        with self._lock:
            self._conn.execute("UPDATE outbox SET sent = 1 WHERE id = ?", (envelope_id,))
