"""The guarantees of gateway.review.store, run against SQLite and the machine's PostgreSQL."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest

from gateway.review.model import Review, Status
from gateway.review.postgres import PostgresStore
from gateway.review.sqlite import SQLiteStore
from gateway.review.store import AlreadyDecided, NotFound, StoreError
from tests.review.store_helpers import PG_DSN, make_review

Store = SQLiteStore | PostgresStore
ROOT = Path(__file__).resolve().parents[2]
# Generous: the bound only catches a wait that was never released.
RELEASE_BOUND_S = 5.0


@dataclasses.dataclass
class Place:
    """Where one test's reviews live; each `new` is another store object (a replica) on it."""

    kind: str
    new: Callable[[], Store]
    # Arguments of tests.review.store_helpers submitting a review with this digest here.
    child_args: Callable[[str], list[str]]


async def _drop_schema(schema: str) -> None:
    conn = await asyncpg.connect(PG_DSN)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture
async def pg_schema() -> AsyncIterator[str]:
    schema = "test_" + uuid.uuid4().hex
    yield schema
    await _drop_schema(schema)


@pytest.fixture(params=["sqlite", "postgres"])
async def place(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Place]:
    if request.param == "sqlite":
        path = tmp_path / "reviews.sqlite3"
        yield Place(
            "sqlite", lambda: SQLiteStore(path), lambda digest: ["sqlite", str(path), digest]
        )
    else:
        schema = "test_" + uuid.uuid4().hex
        yield Place(
            "postgres",
            lambda: PostgresStore(PG_DSN, schema=schema),
            lambda digest: ["postgres", PG_DSN, digest, schema],
        )
        await _drop_schema(schema)


OpenStore = Callable[[], Awaitable[Store]]


@pytest.fixture
async def open_store(place: Place) -> AsyncIterator[OpenStore]:
    """Opens another store object on the test's place; all are closed after the test."""
    stores: list[Store] = []

    async def opened() -> Store:
        store = place.new()
        await store.open()
        stores.append(store)
        return store

    yield opened
    for store in stores:
        await store.close()


@pytest.fixture
async def store(open_store: OpenStore) -> Store:
    return await open_store()


async def _parked(store: Store, review_id: str) -> asyncio.Task[Review]:
    """A task waiting for the review, past its first read."""
    task = asyncio.create_task(store.wait(review_id))
    while store.waiting == 0:  # noqa: ASYNC110 (a counter, no event to await)
        await asyncio.sleep(0.005)
    # The first read is one short query; after it the wait sleeps until woken.
    await asyncio.sleep(0.2)
    assert not task.done()
    return task


def _finish_time(task: asyncio.Task[Review]) -> list[float]:
    """Gets the perf_counter reading of the moment the task finishes."""
    stamps: list[float] = []
    task.add_done_callback(lambda _: stamps.append(time.perf_counter()))
    return stamps


# submit, get, by_digest


async def test_submit_returns_the_stored_review(store: Store) -> None:
    review = make_review()
    assert await store.submit(review) == review
    assert await store.get(review.id) == review
    assert await store.by_digest(review.digest) == review


async def test_a_second_submit_of_a_digest_returns_the_first_and_stores_nothing(
    store: Store,
) -> None:
    first = await store.submit(make_review())
    second = make_review(team="blue", reason="another reason")
    assert second.digest == first.digest and second.id != first.id
    assert await store.submit(second) == first
    assert await store.get(second.id) is None
    assert await store.list() == [first]


async def test_a_decided_digest_is_not_submitted_again(store: Store) -> None:
    first = await store.submit(make_review())
    denied = await store.decide(first.id, approve=False, reviewer="alice")
    assert await store.submit(make_review()) == denied


async def test_concurrent_submits_of_one_digest_leave_exactly_one(
    open_store: OpenStore,
) -> None:
    # Two store objects: on SQLite each has its own connection and thread.
    stores = [await open_store(), await open_store()]
    reviews = [make_review() for _ in range(20)]
    results = await asyncio.gather(
        *(stores[i % 2].submit(review) for i, review in enumerate(reviews))
    )
    assert len({result.id for result in results}) == 1
    assert results[0].id in {review.id for review in reviews}
    assert await stores[0].list() == [results[0]]


async def test_submit_takes_only_pending_reviews(store: Store) -> None:
    with pytest.raises(ValueError, match="pending"):
        await store.submit(make_review(status="approved", decided_by="x", decided_at=1.0))
    assert await store.list() == []


async def test_unknown_id_and_digest_are_none(store: Store) -> None:
    assert await store.get("rv_missing") is None
    assert await store.by_digest("0" * 64) is None


# list, count_pending


async def test_list_filters_by_team_and_status_newest_first(store: Store) -> None:
    red_old = await store.submit(make_review("a", team="red", created=100.0))
    blue = await store.submit(make_review("b", team="blue", created=200.0))
    red_new = await store.submit(make_review("c", team="red", created=300.0))
    # Same instant as red_new: the later submit is the newer.
    red_tie = await store.submit(make_review("d", team="red", created=300.0))
    red_new = await store.decide(red_new.id, approve=True, reviewer="alice")

    assert await store.list() == [red_tie, red_new, blue, red_old]
    assert await store.list(team="red") == [red_tie, red_new, red_old]
    assert await store.list(team="red", status="pending") == [red_tie, red_old]
    assert await store.list(status="approved") == [red_new]
    assert await store.list(status="denied") == []
    assert await store.list(team="green") == []
    assert await store.list(limit=2) == [red_tie, red_new]
    assert await store.list(team="red", limit=1) == [red_tie]
    assert await store.list(limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        await store.list(limit=-1)


async def test_count_pending_counts_one_teams_pending_reviews(store: Store) -> None:
    assert await store.count_pending("red") == 0
    first = await store.submit(make_review("a"))
    await store.submit(make_review("b"))
    await store.submit(make_review("c", team="blue"))
    assert await store.count_pending("red") == 2
    await store.decide(first.id, approve=False, reviewer="alice")
    assert await store.count_pending("red") == 1
    assert await store.count_pending("blue") == 1


async def test_count_pending_by_team_counts_every_teams_pending_reviews(store: Store) -> None:
    assert await store.count_pending_by_team() == {}
    first = await store.submit(make_review("a"))
    await store.submit(make_review("b"))
    blue = await store.submit(make_review("c", team="blue"))
    assert await store.count_pending_by_team() == {"red": 2, "blue": 1}
    await store.decide(first.id, approve=True, reviewer="alice")
    await store.decide(blue.id, approve=False, reviewer="alice")
    # A team with nothing pending is left out.
    assert await store.count_pending_by_team() == {"red": 1}


# decide


@pytest.mark.parametrize(("approve", "status"), [(True, "approved"), (False, "denied")])
async def test_decide_records_reviewer_time_and_note(
    store: Store, approve: bool, status: Status
) -> None:
    review = await store.submit(make_review())
    before = time.time()
    decided = await store.decide(review.id, approve=approve, reviewer="alice", note="checked")
    after = time.time()
    assert decided == dataclasses.replace(
        review, status=status, decided_by="alice", decided_at=decided.decided_at, note="checked"
    )
    assert decided.decided_at is not None and before <= decided.decided_at <= after
    assert await store.get(review.id) == decided


async def test_decide_without_a_note(store: Store) -> None:
    review = await store.submit(make_review())
    decided = await store.decide(review.id, approve=True, reviewer="alice")
    assert decided.note is None and decided.status == "approved"


async def test_deciding_twice_raises_already_decided_and_keeps_the_first(store: Store) -> None:
    review = await store.submit(make_review())
    first = await store.decide(review.id, approve=True, reviewer="alice")
    for approve in (True, False):
        with pytest.raises(AlreadyDecided) as raised:
            await store.decide(review.id, approve=approve, reviewer="mallory", note="again")
        assert raised.value.review == first
    assert await store.get(review.id) == first


async def test_deciding_an_unknown_review_raises_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        await store.decide("rv_missing", approve=True, reviewer="alice")


async def test_concurrent_decisions_from_two_replicas_one_wins(open_store: OpenStore) -> None:
    a, b = await open_store(), await open_store()
    for n in range(10):
        review = await a.submit(make_review(n))
        results = await asyncio.gather(
            a.decide(review.id, approve=True, reviewer="alice"),
            b.decide(review.id, approve=False, reviewer="bob"),
            return_exceptions=True,
        )
        won = [r for r in results if isinstance(r, Review)]
        lost = [r for r in results if isinstance(r, AlreadyDecided)]
        assert len(won) == 1 and len(lost) == 1, results
        assert lost[0].review == won[0]
        assert await a.get(review.id) == won[0] == await b.get(review.id)


# wait


async def test_wait_returns_a_decided_review_at_once(store: Store) -> None:
    review = await store.submit(make_review())
    decided = await store.decide(review.id, approve=False, reviewer="alice")
    async with asyncio.timeout(RELEASE_BOUND_S):
        assert await store.wait(review.id) == decided
    assert store.waiting == 0


async def test_wait_returns_when_decided(store: Store) -> None:
    review = await store.submit(make_review())
    waits = [await _parked(store, review.id), await _parked(store, review.id)]
    assert store.waiting == 2
    decided = await store.decide(review.id, approve=True, reviewer="alice")
    async with asyncio.timeout(RELEASE_BOUND_S):
        assert await asyncio.gather(*waits) == [decided, decided]
    assert store.waiting == 0


async def test_wait_timeout_leaves_no_waiter(store: Store) -> None:
    review = await store.submit(make_review())
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await store.wait(review.id)
    assert store.waiting == 0
    # The review is untouched and a later wait still works.
    assert await store.get(review.id) == review
    task = await _parked(store, review.id)
    decided = await store.decide(review.id, approve=True, reviewer="alice")
    async with asyncio.timeout(RELEASE_BOUND_S):
        assert await task == decided


async def test_wait_for_an_unknown_review_raises_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        await store.wait("rv_missing")
    assert store.waiting == 0


async def test_closing_the_store_fails_its_waits(place: Place) -> None:
    store = place.new()
    await store.open()
    review = await store.submit(make_review())
    task = await _parked(store, review.id)
    await store.close()
    with pytest.raises(StoreError):
        async with asyncio.timeout(RELEASE_BOUND_S):
            await task
    assert store.waiting == 0
    with pytest.raises(StoreError):
        await store.get(review.id)
    await store.close()  # closing twice is harmless


async def test_wait_is_released_by_another_replica(
    place: Place, open_store: OpenStore, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = await open_store(), await open_store()
    latencies: list[float] = []
    for n in range(3):
        review = await a.submit(make_review(n))
        task = await _parked(a, review.id)
        released = _finish_time(task)
        start = time.perf_counter()
        decided = await b.decide(review.id, approve=True, reviewer="alice")
        async with asyncio.timeout(RELEASE_BOUND_S):
            assert await task == decided
        # A task that finished while decide() was returning has its done
        # callbacks queued behind this coroutine: let them run.
        await asyncio.sleep(0)
        latencies.append(released[0] - start)
    with capsys.disabled():
        shown = ", ".join(f"{s * 1000:.1f}" for s in latencies)
        print(f"\n{place.kind}: wait released {shown} ms after decide on another store began")


# durability


async def test_everything_is_there_after_a_reopen(place: Place) -> None:
    store = place.new()
    await store.open()
    kept = await store.submit(make_review("a"))
    approved = await store.decide(
        (await store.submit(make_review("b"))).id, approve=True, reviewer="alice", note="fine"
    )
    denied = await store.decide(
        (await store.submit(make_review("c"))).id, approve=False, reviewer="bob"
    )
    await store.close()

    reopened = place.new()
    await reopened.open()
    try:
        assert await reopened.get(kept.id) == kept
        assert await reopened.by_digest(approved.digest) == approved
        assert sorted(await reopened.list(), key=lambda r: r.id) == sorted(
            [kept, approved, denied], key=lambda r: r.id
        )
        assert await reopened.count_pending("red") == 1
        with pytest.raises(AlreadyDecided):
            await reopened.decide(denied.id, approve=True, reviewer="mallory")
    finally:
        await reopened.close()


async def test_a_review_survives_sigkill_right_after_submit(place: Place) -> None:
    review = make_review("killed")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.review.store_helpers",
        *place.child_args(review.digest),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(30):
        out, _ = await proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    review_id = out.decode().strip()

    store = place.new()
    await store.open()
    try:
        stored = await store.get(review_id)
        assert stored is not None
        assert stored == dataclasses.replace(review, id=review_id, created=stored.created)
        assert stored.status == "pending"
    finally:
        await store.close()


# failing closed


async def test_a_store_that_is_not_open_raises_store_error(place: Place) -> None:
    store = place.new()
    with pytest.raises(StoreError):
        await store.get("rv_any")
    with pytest.raises(StoreError):
        await store.submit(make_review())


async def test_sqlite_that_cannot_open_its_file_raises_store_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    store = SQLiteStore(tmp_path / "file" / "reviews.sqlite3")
    with pytest.raises(StoreError):
        await store.open()
    with pytest.raises(StoreError):
        await store.get("rv_any")


async def test_sqlite_that_is_not_a_database_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "reviews.sqlite3"
    path.write_bytes(b"this is not an SQLite database, only some bytes" * 100)
    with pytest.raises(StoreError):
        await SQLiteStore(path).open()


async def test_unreachable_postgres_raises_store_error() -> None:
    # Port 1 on loopback: nothing listens, the connection is refused at once.
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/test", timeout=2.0)
    with pytest.raises(StoreError):
        await store.open()
    with pytest.raises(StoreError):
        await store.get("rv_any")


def test_postgres_schema_names_are_plain_identifiers() -> None:
    for bad in ("", "Upper", 'a"; DROP TABLE x; --', "1abc", "a" * 49):
        with pytest.raises(ValueError, match="schema"):
            PostgresStore(PG_DSN, schema=bad)


# how each store hears of decisions


async def test_sqlite_decide_wakes_waits_of_its_store_without_the_recheck(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "reviews.sqlite3", recheck_interval=3600)
    await store.open()
    try:
        review = await store.submit(make_review())
        task = await _parked(store, review.id)
        decided = await store.decide(review.id, approve=True, reviewer="alice")
        async with asyncio.timeout(RELEASE_BOUND_S):
            assert await task == decided
    finally:
        await store.close()


async def test_postgres_wait_survives_a_dropped_listener(pg_schema: str) -> None:
    a = PostgresStore(PG_DSN, schema=pg_schema)
    b = PostgresStore(PG_DSN, schema=pg_schema)
    await a.open()
    await b.open()
    try:
        first = await a.submit(make_review("first"))
        task = await _parked(a, first.id)
        # A decision whose notification the listener never hears, as one made
        # while it is disconnected: an update without NOTIFY.
        await _decide_silently(pg_schema, first.id)
        await asyncio.sleep(0.2)
        assert not task.done()
        killed = await _terminate_listeners(pg_schema)
        assert len(killed) == 2
        # Only the re-read after the reconnect can release the wait now.
        async with asyncio.timeout(RELEASE_BOUND_S):
            released = await task
        assert (released.status, released.decided_by) == ("denied", "out-of-band")

        # Listening again: a later decision is heard.
        async with asyncio.timeout(RELEASE_BOUND_S):
            while len(set(await _listeners(pg_schema)) - killed) < 2:  # noqa: ASYNC110 (the server's view)
                await asyncio.sleep(0.05)
        second = await a.submit(make_review("second"))
        task = await _parked(a, second.id)
        decided = await b.decide(second.id, approve=False, reviewer="bob")
        async with asyncio.timeout(RELEASE_BOUND_S):
            assert await task == decided
    finally:
        await a.close()
        await b.close()


async def _decide_silently(schema: str, review_id: str) -> None:
    conn = await asyncpg.connect(PG_DSN)
    try:
        await conn.execute(
            f'UPDATE "{schema}".reviews SET status = $2, decided_by = $3, decided_at = $4'
            " WHERE id = $1",
            review_id,
            "denied",
            "out-of-band",
            time.time(),
        )
    finally:
        await conn.close()


async def _listeners(schema: str) -> list[int]:
    conn = await asyncpg.connect(PG_DSN)
    try:
        rows = await conn.fetch(
            "SELECT pid FROM pg_stat_activity"
            " WHERE application_name = 'reefgate-review-listener' AND query LIKE $1",
            f'LISTEN "{schema}_%',
        )
    finally:
        await conn.close()
    return [int(row["pid"]) for row in rows]


async def _terminate_listeners(schema: str) -> set[int]:
    pids = await _listeners(schema)
    conn = await asyncpg.connect(PG_DSN)
    try:
        for pid in pids:
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await conn.close()
    return set(pids)


# -- submit notifications: how a replica learns a digest is under review --


async def test_on_submit_hears_each_new_review_once(store: Store) -> None:
    heard: list[tuple[str, str]] = []
    store.on_submit(lambda team, digest: heard.append((team, digest)))
    first = await store.submit(make_review("one"))
    await store.submit(make_review("one"))  # the same digest: nothing new is stored
    second = await store.submit(make_review("two"))
    for _ in range(200):
        if len(heard) >= 2:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert heard == [(first.team, first.digest), (second.team, second.digest)]


async def test_a_postgres_replica_hears_of_reviews_another_one_stores(
    pg_schema: str,
) -> None:
    here, there = PostgresStore(PG_DSN, schema=pg_schema), PostgresStore(PG_DSN, schema=pg_schema)
    await here.open()
    await there.open()
    try:
        heard = asyncio.Event()
        learned: list[tuple[str, str]] = []

        def learn(team: str, digest: str) -> None:
            learned.append((team, digest))
            heard.set()

        here.on_submit(learn)
        review = await there.submit(make_review("made on the other replica"))
        async with asyncio.timeout(5):
            await heard.wait()
        assert learned == [(review.team, review.digest)]
    finally:
        await here.close()
        await there.close()
