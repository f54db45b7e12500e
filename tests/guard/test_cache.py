"""The detectors' per-text cache: bounded, oldest out first, entries expire."""

from __future__ import annotations

from gateway.guard.cache import TextCache


def test_hit_and_miss() -> None:
    cache: TextCache[str, int] = TextCache(maxsize=4, ttl=10.0)
    cache.put("a", 1, now=0.0)
    assert cache.get("a", now=5.0) == 1
    assert cache.get("b", now=5.0) is None


def test_expired_entry_is_a_miss_and_is_dropped() -> None:
    cache: TextCache[str, int] = TextCache(maxsize=4, ttl=10.0)
    cache.put("a", 1, now=0.0)
    assert cache.get("a", now=10.5) is None
    assert len(cache) == 0


def test_full_cache_evicts_oldest_inserted_first() -> None:
    cache: TextCache[int, int] = TextCache(maxsize=3, ttl=100.0)
    for key in range(3):
        cache.put(key, key, now=0.0)
    cache.get(0, now=1.0)  # a hit does not refresh an entry
    cache.put(3, 3, now=1.0)
    assert cache.get(0, now=1.0) is None
    assert [cache.get(k, now=1.0) for k in (1, 2, 3)] == [1, 2, 3]
    assert len(cache) == 3


def test_reinserting_a_key_moves_it_to_the_back() -> None:
    cache: TextCache[int, int] = TextCache(maxsize=2, ttl=100.0)
    cache.put(0, 0, now=0.0)
    cache.put(1, 1, now=0.0)
    cache.put(0, 10, now=0.0)
    cache.put(2, 2, now=0.0)
    assert cache.get(1, now=0.0) is None
    assert cache.get(0, now=0.0) == 10


def test_steady_state_eviction_keeps_the_newest_window() -> None:
    # Many more inserts than the size: what is left is exactly the last `maxsize`.
    cache: TextCache[int, int] = TextCache(maxsize=1000, ttl=100.0)
    for key in range(50_000):
        cache.put(key, key, now=0.0)
    assert len(cache) == 1000
    assert cache.get(48_999, now=0.0) is None
    assert cache.get(49_000, now=0.0) == 49_000
    assert cache.get(49_999, now=0.0) == 49_999


def test_weight_bounds_the_total_and_evicts_oldest_first() -> None:
    cache: TextCache[str, int] = TextCache(maxsize=100, ttl=100.0, max_weight=10)
    cache.put("aaaa", 1, 0.0, weight=4)
    cache.put("bbbb", 2, 0.0, weight=4)
    cache.put("cccc", 3, 0.0, weight=4)
    assert cache.get("aaaa", 1.0) is None
    assert cache.get("bbbb", 1.0) == 2 and cache.get("cccc", 1.0) == 3
    assert cache.weight == 8
    # Replacing an entry does not count it twice; one heavier than the limit is not kept.
    cache.put("bbbb", 5, 0.0, weight=4)
    assert cache.weight == 8
    cache.put("x" * 11, 9, 0.0, weight=11)
    assert cache.get("x" * 11, 1.0) is None
    assert cache.weight == 8
    # Expired entries give their weight back.
    assert cache.get("cccc", 1000.0) is None
    assert cache.weight == 4


def test_an_expired_key_put_again_is_newest() -> None:
    """A key dropped on expiry and put again is evicted after the keys put before it."""
    cache: TextCache[str, int] = TextCache(maxsize=3, ttl=10.0, max_weight=100)
    cache.put("a", 1, 0.0, weight=1)
    cache.put("b", 2, 5.0, weight=1)
    assert cache.get("a", 11.0) is None  # expired and dropped
    cache.put("a", 3, 11.0, weight=1)
    cache.put("c", 4, 11.0, weight=1)
    cache.put("d", 5, 11.0, weight=1)
    assert cache.get("b", 12.0) is None
    assert [cache.get(k, 12.0) for k in "acd"] == [3, 4, 5]
    assert len(cache) == 3 and cache.weight == 3
    for n in range(20):
        cache.put(str(n), n, 12.0, weight=1)
    assert len(cache) == 3 and cache.weight == 3
