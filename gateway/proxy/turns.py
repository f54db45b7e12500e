"""One turn of the event loop, as ``await asyncio.sleep(0)`` gives it, for less.

`asyncio.sleep(0)` is two interpreted frames (``sleep`` and the generator it
awaits), each made and resumed; a request that waits for its cohort does so
several times. Awaiting `TURN` yields ``None`` to the task once, which is
what that generator yields: the task is scheduled again at the back of the
loop's queue.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Final


class Turn:
    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        # A tuple's iterator: the one None it yields is the bare yield a
        # task reads as "run me again after the others".
        return iter((None,))  # type: ignore[return-value]


TURN: Final = Turn()
