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
    """Oldest-first eviction past ``maxsize`` entries or ``max_weight`` in all.

    An entry's weight is what its key holds (the characters of a text used as
    its own key); the total bounds the memory the keys take.
    """

    __slots__ = ("_data", "_max_weight", "_maxsize", "_ttl", "_weight")

    def __init__(self, maxsize: int, ttl: float, max_weight: int | None = None) -> None:
        self._data: OrderedDict[K, tuple[float, V, int]] = OrderedDict()
        self._maxsize = maxsize
        self._ttl = ttl
        self._max_weight = max_weight
        self._weight = 0

    def __len__(self) -> int:
        return len(self._data)

    @property
    def weight(self) -> int:
        return self._weight

    def get(self, key: K, now: float) -> V | None:
        item = self._data.get(key)
        if item is None:
            return None
        if item[0] < now:
            del self._data[key]
            self._weight -= item[2]
            return None
        return item[1]

    def put(self, key: K, value: V, now: float, weight: int = 0) -> None:
        data = self._data
        old = data.pop(key, None)
        if old is not None:
            self._weight -= old[2]
        elif len(data) >= self._maxsize:
            self._weight -= data.popitem(last=False)[1][2]
        limit = self._max_weight
        if limit is not None:
            if weight > limit:
                return
            while self._weight + weight > limit:
                self._weight -= data.popitem(last=False)[1][2]
        data[key] = (now + self._ttl, value, weight)
        self._weight += weight


def now() -> float:
    return time.monotonic()
