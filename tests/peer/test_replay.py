"""The replay store protocol: one suite, every implementation."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gateway.peer.replay import Binding, MemoryReplayStore, ReplayStore, ReplayStoreError
from gateway.peer.replay_sqlite import SQLiteReplayStore

H1, H2 = "a" * 64, "b" * 64
ID = "01KXK8343R2N5GW62RPZACDFHF"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


Factory = Callable[[Clock], ReplayStore]


@pytest.fixture(params=["memory", "sqlite"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    opened: list[SQLiteReplayStore] = []

    def factory(clock: Clock) -> ReplayStore:
        if request.param == "memory":
            return MemoryReplayStore(lease=60, clock=clock)
        store = SQLiteReplayStore(tmp_path / "replay.sqlite", lease=60, clock=clock)
        store.open()
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def test_claim_commit_duplicate_mismatch(make: Factory) -> None:
    store = make(Clock())
    assert store.claim("alice", ID, H1) is Binding.NEW
    assert store.claim("alice", ID, H1) is Binding.IN_FLIGHT
    assert store.claim("alice", ID, H2) is Binding.MISMATCH
    store.commit("alice", ID, H1)
    assert store.claim("alice", ID, H1) is Binding.DUPLICATE
    assert store.claim("alice", ID, H2) is Binding.MISMATCH


def test_ids_are_per_sender(make: Factory) -> None:
    store = make(Clock())
    assert store.claim("alice", ID, H1) is Binding.NEW
    assert store.claim("bob", ID, H2) is Binding.NEW


def test_release_frees_only_an_uncommitted_claim_of_the_same_hash(make: Factory) -> None:
    store = make(Clock())
    assert store.claim("alice", ID, H1) is Binding.NEW
    store.release("alice", ID, H2)  # not this caller's claim
    assert store.claim("alice", ID, H1) is Binding.IN_FLIGHT
    store.release("alice", ID, H1)
    assert store.claim("alice", ID, H2) is Binding.NEW
    store.commit("alice", ID, H2)
    store.release("alice", ID, H2)  # a binding is for ever
    assert store.claim("alice", ID, H2) is Binding.DUPLICATE


def test_abandoned_claim_lapses_after_the_lease(make: Factory) -> None:
    clock = Clock()
    store = make(clock)
    assert store.claim("alice", ID, H1) is Binding.NEW
    clock.now += 59
    assert store.claim("alice", ID, H2) is Binding.MISMATCH
    clock.now += 1
    assert store.claim("alice", ID, H2) is Binding.NEW
    # The first opener's commit comes too late: it lost its claim.
    with pytest.raises(ReplayStoreError):
        store.commit("alice", ID, H1)
    store.commit("alice", ID, H2)
    clock.now += 10**9
    assert store.claim("alice", ID, H1) is Binding.MISMATCH


def test_commit_without_claim_fails(make: Factory) -> None:
    store = make(Clock())
    with pytest.raises(ReplayStoreError):
        store.commit("alice", ID, H1)


def test_concurrent_claims_have_one_winner(make: Factory) -> None:
    store = make(Clock())
    results: list[Binding] = []
    barrier = threading.Barrier(8)

    def claim() -> None:
        barrier.wait()
        results.append(store.claim("alice", ID, H1))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.value for r in results) == ["in_flight"] * 7 + ["new"]


def test_sqlite_bindings_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "replay.sqlite"
    with SQLiteReplayStore(path) as store:
        assert store.claim("alice", ID, H1) is Binding.NEW
        store.commit("alice", ID, H1)
    with SQLiteReplayStore(path) as store:
        assert store.claim("alice", ID, H1) is Binding.DUPLICATE
        assert store.claim("alice", ID, H2) is Binding.MISMATCH


def test_sqlite_two_stores_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "replay.sqlite"
    with SQLiteReplayStore(path) as a, SQLiteReplayStore(path) as b:
        assert a.claim("alice", ID, H1) is Binding.NEW
        assert b.claim("alice", ID, H1) is Binding.IN_FLIGHT
        a.commit("alice", ID, H1)
        assert b.claim("alice", ID, H1) is Binding.DUPLICATE


def test_sqlite_misuse(tmp_path: Path) -> None:
    store = SQLiteReplayStore(tmp_path / "replay.sqlite")
    with pytest.raises(ReplayStoreError, match="not open"):
        store.claim("alice", ID, H1)
    store.open()
    with pytest.raises(ReplayStoreError, match="already open"):
        store.open()
    store.close()
    store.close()


def test_sqlite_unusable_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ReplayStoreError):
        SQLiteReplayStore(blocker / "replay.sqlite").open()
