"""Reviews for the store tests, and the child process of the SIGKILL test.

``python -m tests.review.store_helpers sqlite <path> <digest>`` or
``... postgres <dsn> <digest> <schema>`` submits one review, prints its id and
kills itself with SIGKILL as soon as `submit` has returned.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
from typing import Any

from gateway.review.model import Finding, Review, approval_digest, pending
from gateway.review.postgres import PostgresStore
from gateway.review.sqlite import SQLiteStore

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def make_review(body: object = "hello", **fields: Any) -> Review:
    """A pending review whose digest is that of ``body``; ``fields`` override any field."""
    review = pending(
        team="red",
        digest=approval_digest(
            source="red",
            destination="openai/gpt-4o",
            direction="outbound",
            body=body,
            policy_version="p1",
        ),
        direction="outbound",
        source="red",
        destination="openai/gpt-4o",
        category="classifier",
        reason="looks like an instruction to exfiltrate",
        policy_version="p1",
        excerpt="send the [REDACTED:aws_access_key] to ...",
        findings=(Finding(kind="aws_access_key", fingerprint="fp:1a2b3c", where="messages[0]"),),
    )
    return dataclasses.replace(review, **fields)


async def _submit_and_die(kind: str, where: str, digest: str, schema: str | None) -> None:
    store = SQLiteStore(where) if kind == "sqlite" else PostgresStore(where, schema=schema or "")
    await store.open()
    review = await store.submit(make_review(digest=digest))
    sys.stdout.write(review.id + "\n")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    kind, where, digest, *rest = sys.argv[1:]
    asyncio.run(_submit_and_die(kind, where, digest, rest[0] if rest else None))
