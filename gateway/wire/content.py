"""Payload bytes to the texts the guard must see: media, archives, text, anything else.

Every payload the gateway finds (a base64 field, a ``data:`` URL, a multipart
part, a raw upload body) goes through :func:`inspect`:

- a real media file of a type the model APIs take, whose declared type
  agrees (:mod:`gateway.wire.media`): only the parts of it that are not media
  data are scanned, usually none;
- an archive or compressed file (:mod:`gateway.wire.archives`): its member
  names, and each member as a payload of its own, within the bounds there;
- anything else as text (:mod:`gateway.wire.charsets`): UTF-8, UTF-16 or
  UTF-32 with or without a byte order mark, else its printable runs.

The bounds on archives hold per request: :class:`RequestBudget` opens one for
all payloads read while it is active.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final, Literal

from gateway.wire import archives, charsets, media
from gateway.wire.archives import MAX_NESTING, Budget, Unreadable
from gateway.wire.media import BytesSource, Source

Kind = Literal["media", "archive", "text", "binary"]

_BUDGET: Final[ContextVar[Budget | None]] = ContextVar("reefgate_payload_budget", default=None)


@dataclass(frozen=True, slots=True)
class Found:
    """The texts to scan in a payload and what it turned out to be.

    ``kind`` is ``text`` only for clean UTF-8; UTF-16/32 and text with a few
    bad bytes are ``binary`` like anything read by its printable runs.
    """

    texts: list[str]
    kind: Kind


class RequestBudget:
    """One :class:`~gateway.wire.archives.Budget` for every payload of a request, in a ``with``.

    A class rather than ``@contextmanager``: the generator machinery costs
    several times what the block does, on every request.
    """

    __slots__ = ("_token",)

    def __enter__(self) -> Budget:
        budget = Budget()
        self._token = _BUDGET.set(budget)
        return budget

    def __exit__(self, *exc: object) -> None:
        _BUDGET.reset(self._token)


def inspect(source: Source | bytes, declared: Sequence[str | None] = ()) -> Found:
    """What to scan in a payload; ``declared`` are the types it is said to be.

    Raises :class:`~gateway.wire.archives.Unreadable` (a PayloadError, so 400)
    for an archive that cannot be read in full within the bounds.
    """
    if isinstance(source, bytes):
        source = BytesSource(source)
    return _inspect(source, declared, _BUDGET.get() or Budget(), 0)


def texts(data: bytes, *declared: str | None) -> list[str]:
    return inspect(data, declared).texts


def _inspect(source: Source, declared: Sequence[str | None], budget: Budget, depth: int) -> Found:
    if source.size == 0:
        return Found([], "text")
    if depth <= MAX_NESTING:
        parts = media.inspect(source, declared, budget)
        if parts is not None:
            found = [t for part in parts for t in _inspect_bytes(part, (), budget, depth + 1)]
            # A few characters decoded from a numeric chunk are noise, and too
            # short to hold a secret or an instruction.
            joined = "\n".join(t for t in found if len(t.strip()) >= charsets.MIN_RUN)
            return Found([joined] if joined else [], "media")
    data = source.whole()
    fmt = archives.kind(data)
    if fmt is not None:
        if depth >= MAX_NESTING:
            raise Unreadable(f"archives in the request nest deeper than {MAX_NESTING} levels")
        names: list[str] = []
        out: list[str] = []
        for member in archives.members(fmt, data, budget):
            if member.name:
                names.append(member.name)
            label = (member.name,) if member.name else ()
            out.extend(_inspect_bytes(member.data, label, budget, depth + 1))
        return Found(["\n".join(names), *out] if names else out, "archive")
    found, clean = charsets.decode(data)
    return Found(found, "text" if clean else "binary")


def _inspect_bytes(
    data: bytes, declared: Sequence[str | None], budget: Budget, depth: int
) -> list[str]:
    return _inspect(BytesSource(data), declared, budget, depth).texts
