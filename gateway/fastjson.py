"""orjson, when it is installed: the one place the gateway imports it.

orjson is optional (the ``fast`` extra). Everything that uses it has a pure
Python path giving identical results, and uses orjson only where that was
shown to agree (``gateway.wire.jsontext``, ``gateway.canonical``).

``REEFGATE_NO_ORJSON=1`` in the environment when this module is first
imported makes the gateway behave as if orjson were absent, so the pure paths
are exercised on machines that have it (CI runs the tests both ways).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

__all__ = ["CODEC", "DISABLE_ENV", "Codec", "orjson_codec"]

DISABLE_ENV = "REEFGATE_NO_ORJSON"


@dataclass(frozen=True, slots=True)
class Codec:
    """orjson's functions, typed for what the gateway asks of them.

    ``loads`` raises ``ValueError`` for what it refuses; ``dumps`` and
    ``dumps_sorted`` (keys sorted by code point) write compact JSON and raise
    ``TypeError`` for what they cannot write (and past their nesting limit).
    """

    loads: Callable[[bytes], object]
    dumps: Callable[[object], bytes]
    dumps_sorted: Callable[[object], bytes]


def orjson_codec() -> Codec | None:
    """orjson's codec when it can be imported, whatever the environment says."""
    try:
        import orjson
    except ImportError:
        return None
    return Codec(
        loads=orjson.loads,
        dumps=orjson.dumps,
        dumps_sorted=partial(orjson.dumps, option=orjson.OPT_SORT_KEYS),
    )


def _disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip() not in ("", "0")


CODEC: Codec | None = None if _disabled() else orjson_codec()
