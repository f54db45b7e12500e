"""The per-turn circuit breaker: trips once, slides its window, stays bounded and expires."""

from __future__ import annotations

import pytest

from gateway.guard.guardian.breaker import Breaker, Trip


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def feed(breaker: Breaker, key: str, judgements: str) -> list[Trip | None]:
    """'d' is a denial, 'a' an allow."""
    return [breaker.record(key, j == "d") for j in judgements]


def test_three_consecutive_denials_trip_it_once() -> None:
    b = Breaker()
    results = feed(b, "turn", "aaddd")
    assert results[:4] == [None] * 4
    assert results[4] == Trip(consecutive=3, recent=3)
    assert b.tripped("turn") == Trip(3, 3)
    assert feed(b, "turn", "dda") == [None, None, None]
    assert b.tripped("turn") == Trip(3, 3)


def test_an_allow_resets_the_consecutive_count() -> None:
    b = Breaker()
    assert feed(b, "turn", "ddadd") == [None] * 5
    assert b.tripped("turn") is None


def test_ten_denials_among_fifty_trip_it_when_spread_out() -> None:
    b = Breaker()
    results = feed(b, "turn", "daa" * 9 + "d")
    assert results[:-1] == [None] * (len(results) - 1)
    assert results[-1] == Trip(consecutive=1, recent=10)


def test_the_window_slides_so_old_denials_drop_out() -> None:
    b = Breaker()
    feed(b, "turn", "da" * 4 + "d")  # 5 denials
    feed(b, "turn", "a" * 50)  # all five are now older than the last 50
    assert feed(b, "turn", "daa" * 4) == [None] * 12  # 4 more: 4 in the window, not 9
    assert b.tripped("turn") is None
    results = feed(b, "turn", "da" * 6)  # 10 inside the window
    assert results[-2] == Trip(consecutive=1, recent=10)


def test_turns_are_counted_apart() -> None:
    b = Breaker()
    feed(b, "one", "dd")
    feed(b, "two", "dd")
    assert b.tripped("one") is None and b.tripped("two") is None
    assert b.record("one", True) == Trip(3, 3)
    assert b.tripped("two") is None


def test_limits_are_configurable() -> None:
    b = Breaker(consecutive=2, window=4, window_denials=3)
    assert feed(b, "k", "dad") == [None, None, None]
    assert b.record("k", True) == Trip(consecutive=2, recent=3)


def test_entries_expire_after_their_last_judgement() -> None:
    clock = Clock()
    b = Breaker(ttl_s=10.0, timer=clock)
    feed(b, "turn", "ddd")
    clock.now = 9.0
    assert b.tripped("turn") is not None
    b.record("turn", False)  # activity keeps the turn alive
    clock.now = 18.0
    assert b.tripped("turn") is not None
    clock.now = 30.0
    assert b.tripped("turn") is None
    assert b.record("turn", True) is None  # a fresh count


def test_the_number_of_turns_held_is_bounded() -> None:
    b = Breaker(maxsize=2)
    feed(b, "a", "ddd")
    feed(b, "b", "d")
    feed(b, "c", "d")
    assert b.tripped("a") is None  # evicted to make room
    assert len(b._turns) <= 2


@pytest.mark.parametrize(
    "kwargs",
    [{"consecutive": 0}, {"window": 0}, {"ttl_s": 0.0}, {"maxsize": 0}, {"window_denials": 60}],
)
def test_nonsense_limits_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"must|cannot"):
        Breaker(**kwargs)  # type: ignore[arg-type]
