"""The circuit breaker: stops an agent that keeps running into the guardian within one turn.

An agent refused again and again is either stuck or probing for a way around
the rules; past a point another try helps nobody, so it is told to stop and
ask its user. The breaker trips on ``consecutive`` refusals in a row, or on
``window_denials`` refusals among the last ``window`` judgements of the turn,
and it trips once: from then on the turn stays tripped until its entry expires.
The caller counts a review that failed as a refusal.

Turns live in a TTL cache, so a gateway serving many agents holds at most
``maxsize`` of them, each for ``ttl_s`` seconds after its latest judgement.
Used from one event loop, it needs no lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from cachetools import TTLCache


@dataclass(frozen=True, slots=True)
class Trip:
    """The counts at the moment the breaker tripped."""

    consecutive: int
    recent: int


@dataclass(slots=True)
class _Turn:
    window: deque[bool]
    consecutive: int = 0
    denials: int = 0  # refusals currently inside the window
    trip: Trip | None = field(default=None)


class Breaker:
    def __init__(
        self,
        *,
        consecutive: int = 3,
        window: int = 50,
        window_denials: int = 10,
        maxsize: int = 100_000,
        ttl_s: float = 3600.0,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        if min(consecutive, window, window_denials, maxsize) < 1 or ttl_s <= 0:
            raise ValueError("breaker limits, size and lifetime must be positive")
        if window_denials > window:
            raise ValueError("window_denials cannot exceed the window it is counted in")
        self._consecutive = consecutive
        self._window = window
        self._window_denials = window_denials
        self._turns: TTLCache[str, _Turn] = TTLCache(maxsize=maxsize, ttl=ttl_s, timer=timer)

    def tripped(self, key: str) -> Trip | None:
        turn = self._turns.get(key)
        return None if turn is None else turn.trip

    def record(self, key: str, denied: bool) -> Trip | None:
        """Count one judgement; returns the Trip only for the judgement that trips the breaker."""
        turn = self._turns.get(key)
        if turn is None:
            turn = _Turn(deque(maxlen=self._window))
        # Storing it again restarts its lifetime: a turn still in use does not expire.
        self._turns[key] = turn
        if turn.trip is not None:
            return None
        if len(turn.window) == self._window and turn.window[0]:
            turn.denials -= 1  # the oldest judgement is about to drop out
        turn.window.append(denied)
        turn.denials += denied
        turn.consecutive = turn.consecutive + 1 if denied else 0
        if turn.consecutive >= self._consecutive or turn.denials >= self._window_denials:
            turn.trip = Trip(turn.consecutive, turn.denials)
            return turn.trip
        return None
