"""The deterministic floor: every concrete secret in a text, as (kind, value) pairs.

The floor is the detectors of scope `EVERY`: the built-in secret rules and a
team's custom rules, run together in one pass. The scan runs on the text as
sent and on what it says once unwrapped (decoded from base64, hex and escapes,
normalised from look-alike and invisible characters: see `unwrap`); a value
found in a derived text is the decoded secret, so its fingerprint is that of
the real value. The pipeline fingerprints the values at once and keeps only
the fingerprints.
"""

from __future__ import annotations

from gateway.guard.decision import Action
from gateway.guard.detectors import unwrap
from gateway.guard.detectors.builtin import SECRETS
from gateway.guard.detectors.custom import CustomRules
from gateway.guard.findings import Finding


class Floor:
    """The built-in secret rules plus, per team, custom rules: one scan, one unwrap pass."""

    __slots__ = ("_custom", "key")

    def __init__(self, custom: CustomRules | None = None) -> None:
        self._custom = custom if custom is not None and custom.actions else None
        # Cached results are shared by every team with the same floor.
        self.key: tuple[object, ...] = () if self._custom is None else self._custom.key

    def _scan(self, text: str) -> list[Finding]:
        found = SECRETS.inspect(text)
        if self._custom is not None:
            found.extend(self._custom.inspect(text))
        return found

    def find(self, text: str) -> list[tuple[str, str]]:
        """(kind, value) for each finding in ``text`` or in a wrapping of it.

        Raises `unwrap.UnwrapLimit` for a text wrapped beyond the decoding bounds.
        """
        return unwrap.find(text, self._scan)

    def mark(self, text: str) -> str:
        """``text`` with each match of a deny custom rule replaced by its marker."""
        if self._custom is None:
            return text
        return self._custom.mark(text)

    def action(self, kind: str) -> Action:
        """What a finding of ``kind`` does: built-in kinds deny; custom ones say."""
        if self._custom is None:
            return "deny"
        return self._custom.actions.get(kind, "deny")


DEFAULT = Floor()


def find(text: str) -> list[tuple[str, str]]:
    """(kind, value) for each built-in secret in ``text`` or in a wrapping of it."""
    return DEFAULT.find(text)


def holds_secret(text: str) -> bool:
    """Whether ``text`` may not be echoed: it holds a secret, or it could not be checked.

    For a client-chosen string that would go into an error message or the
    audit log without having passed the outbound check.
    """
    try:
        return bool(find(text))
    except Exception:
        return True


REDACTED = "[redacted]"


def shown(text: str) -> str:
    """``text`` as it may be echoed: itself, or a placeholder when it may not be."""
    return REDACTED if holds_secret(text) else text
