"""A lean TTL cache for the deterministic detectors' per-text results.

`cachetools.TTLCache` (used for classifier verdicts) costs microseconds of
Python per lookup, which is more than a lookup here is worth: every segment
of every request does one. This keeps one dict of (expiry, value); eviction
is oldest-inserted first, and a hit does no bookkeeping at all.
"""

from __future__ import annotations

import time
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TextCache(Generic[K, V]):
    __slots__ = ("_data", "_maxsize", "_ttl")

    def __init__(self, maxsize: int, ttl: float) -> None:
        self._data: dict[K, tuple[float, V]] = {}
        self._maxsize = maxsize
        self._ttl = ttl

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: K, now: float) -> V | None:
        item = self._data.get(key)
        if item is None:
            return None
        if item[0] < now:
            del self._data[key]
            return None
        return item[1]

    def put(self, key: K, value: V, now: float) -> None:
        data = self._data
        if key in data:
            del data[key]
        elif len(data) >= self._maxsize:
            # Oldest first: dicts keep insertion order, so this is O(1).
            del data[next(iter(data))]
        data[key] = (now + self._ttl, value)


def now() -> float:
    return time.monotonic()
