"""A lean TTL cache for the deterministic detectors' per-text results.

`cachetools.TTLCache` (used for classifier verdicts) costs microseconds of
Python per lookup, which is more than a lookup here is worth: every segment
of every request does one. This keeps one OrderedDict of (expiry, value);
eviction is oldest-inserted first, and a hit does no bookkeeping at all.

An OrderedDict, not a dict: evicting a plain dict's first key means
`next(iter(d))`, which walks every slot its earlier deletions left empty
until the next resize; in the steady state of a full cache that walk averaged
tens of thousands of slots per insert. `popitem(last=False)` is O(1).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TextCache(Generic[K, V]):
    __slots__ = ("_data", "_maxsize", "_ttl")

    def __init__(self, maxsize: int, ttl: float) -> None:
        self._data: OrderedDict[K, tuple[float, V]] = OrderedDict()
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
            data.popitem(last=False)
        data[key] = (now + self._ttl, value)


def now() -> float:
    return time.monotonic()
