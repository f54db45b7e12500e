"""Shared types for the sans-IO wire adapters.

An adapter turns a parsed JSON payload into the segments the guard checks. It
never does I/O and never mutates the payload.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from gateway.wire.payload_error import PayloadError as PayloadError


class Trust(StrEnum):
    # Text the agent itself wrote or was given by its operator.
    TRUSTED = "trusted"
    # Text that came from outside the agent's trust boundary (tool results,
    # documents, peer messages); it is also checked inbound for injection.
    UNTRUSTED = "untrusted"
    # Text the model does not read as prose: identifiers, enum values, object
    # keys, header values, the request path. It still leaves the gateway, so
    # the secret floor sees it; the injection check and the classifier do not.
    OPAQUE = "opaque"


# Nothing expected: the default of `Segment.expected`, one object for all.
NOTHING_EXPECTED: Final[frozenset[str]] = frozenset()


class Segment:
    """One piece of text found in a payload.

    ``path`` locates it in the JSON (``messages[2].content[0].text``),
    ``index`` is the message/item index when there is one, so errors can say
    where a secret was without quoting it.

    Never changed once made: the segments of a request's repeated parts (its
    headers, a tool call's arguments, the messages of a resent history) are
    kept and shared by the requests that send them again. A walk that places
    another walk's segments elsewhere makes new ones.

    The one exception is the guard's memo, ``floor_owner`` and ``floor_seen``:
    what the guard's floor found in ``text``, and a token of the guard and
    floor that found it (see `Guard._inspect`). A resent message's segment
    then costs the guard a field read instead of a lookup in its per-text
    cache. The memo is not part of the segment's value: it is not compared,
    copied, pickled or shown.

    A plain class rather than a dataclass: compiled (setup.py), its fields
    are read in place by the compiled modules that read them a few dozen
    times a request, and it is built without a Python ``__init__``, which a
    dataclass's generated one would be. Compared by value, as a dataclass is.
    """

    __slots__ = ("expected", "floor_owner", "floor_seen", "index", "path", "role", "text", "trust")

    def __init__(
        self,
        path: str,
        role: str,
        text: str,
        trust: Trust = Trust.TRUSTED,
        index: int | None = None,
        # Secret kinds this text is expected to carry: the agent's API key for
        # this upstream in its credential header. Any other finding in it still denies.
        expected: frozenset[str] = NOTHING_EXPECTED,
    ) -> None:
        self.path = path
        self.role = role
        self.text = text
        self.trust = trust
        self.index = index
        self.expected = expected
        self.floor_owner: object = None
        self.floor_seen: object = None

    def _fields(self) -> tuple[str, str, str, Trust, int | None, frozenset[str]]:
        return (self.path, self.role, self.text, self.trust, self.index, self.expected)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Segment):
            return NotImplemented
        return self._fields() == other._fields()

    # Equal by value and never changed, but unhashable like the dataclass it was.
    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[Segment], tuple[object, ...]]:
        # Copied and pickled by its fields: compiled, it has no other state.
        return Segment, self._fields()

    def __repr__(self) -> str:
        return (
            f"Segment(path={self.path!r}, role={self.role!r}, text={self.text!r}, "
            f"trust={self.trust!r}, index={self.index!r}, expected={self.expected!r})"
        )

    def moved(self, path: str, index: int | None) -> Segment:
        """This segment's text at another place: a new segment, since this one may be shared."""
        return Segment(path, self.role, self.text, self.trust, index, self.expected)

    def where(self) -> str:
        if self.index is None:
            return f"{self.path} (role {self.role})"
        return f"message {self.index} (role {self.role}, {self.path})"


# The deepest nesting any adapter walks; deeper payloads are refused rather
# than risk recursion limits or skipping text.
MAX_DEPTH: Final = 64
