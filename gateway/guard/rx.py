"""Operator-written regexes, compiled with RE2 so that none can take more than linear time.

Python's `re` backtracks: a pattern like ``(a+)+$`` in a team's YAML would let
one request hold a worker for minutes. RE2 refuses the features that need
backtracking (backreferences, lookaround) when the pattern is compiled, so a
pattern that loads runs in time linear in the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, cast

import re2  # type: ignore[import-untyped]


class PatternError(ValueError):
    """RE2 cannot compile the pattern (a syntax error, or a feature that needs backtracking)."""


class Match(Protocol):
    def start(self) -> int: ...
    def end(self) -> int: ...
    def group(self, index: int = 0) -> str: ...


class Pattern(Protocol):
    pattern: str

    def search(self, text: str) -> Match | None: ...
    def fullmatch(self, text: str) -> Match | None: ...
    def finditer(self, text: str) -> Iterator[Match]: ...
    def sub(self, replacement: str, text: str) -> str: ...


# RE2 writes its parse errors to stderr through absl before raising; the
# exception carries the same message, so the log line is only noise.
_options: Any = re2.Options()
_options.log_errors = False


def compile(pattern: str) -> Pattern:
    try:
        return cast(Pattern, re2.compile(pattern, _options))
    except re2.error as exc:
        message = exc.args[0] if exc.args else exc
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        raise PatternError(f"pattern {pattern!r} is not valid for RE2: {message}") from exc
