"""Shared types for the sans-IO wire adapters.

An adapter turns a parsed JSON payload into the segments the guard checks. It
never does I/O and never mutates the payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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


# Not frozen: thousands are built per second on the request path, and a frozen
# dataclass pays for object.__setattr__ on every field.
@dataclass(slots=True)
class Segment:
    """One piece of text found in a payload.

    ``path`` locates it in the JSON (``messages[2].content[0].text``),
    ``index`` is the message/item index when there is one, so errors can say
    where a secret was without quoting it.

    Never changed once made: the segments of a request's repeated parts (its
    headers, a tool call's arguments) are kept and shared by the requests
    that send them again. A walk that places another walk's segments
    elsewhere makes new ones.
    """

    path: str
    role: str
    text: str
    trust: Trust = Trust.TRUSTED
    index: int | None = None
    # Secret kinds this text is expected to carry: the agent's API key for this
    # upstream in its credential header. Any other finding in it still denies.
    expected: frozenset[str] = frozenset()

    def moved(self, path: str, index: int | None) -> Segment:
        """This segment's text at another place: a new segment, since this one may be shared."""
        return Segment(path, self.role, self.text, self.trust, index, self.expected)

    def where(self) -> str:
        if self.index is None:
            return f"{self.path} (role {self.role})"
        return f"message {self.index} (role {self.role}, {self.path})"


class PayloadError(ValueError):
    """The payload cannot be read by the adapter; the gateway answers 400."""


# The deepest nesting any adapter walks; deeper payloads are refused rather
# than risk recursion limits or skipping text.
MAX_DEPTH = 64
