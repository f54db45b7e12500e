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

from collections.abc import Callable, Sequence
from functools import partial

from gateway.guard.decision import Action
from gateway.guard.detectors import unwrap
from gateway.guard.detectors.base import Detector, Scope
from gateway.guard.detectors.builtin import SECRETS, SecretRules
from gateway.guard.detectors.custom import CustomRules
from gateway.guard.findings import Finding


class Floor:
    """A team's detectors of scope `EVERY`, run as one scan inside one unwrap pass."""

    __slots__ = ("_actions", "_custom", "_scan", "key")

    def __init__(self, detectors: Sequence[Detector] = (SECRETS,)) -> None:
        every = [d for d in detectors if d.scope is Scope.EVERY]
        self._custom = [d for d in every if isinstance(d, CustomRules)]
        # The unwrap pass calls the scan once per view of every text: a lone
        # detector whose findings are known to be a list is called as is,
        # without a Python frame around it each time.
        lone = every[0] if len(every) == 1 else None
        self._scan: Callable[[str], list[Finding]]
        if isinstance(lone, SecretRules | CustomRules):
            self._scan = lone.inspect
        else:
            self._scan = partial(_scan_all, tuple(d.inspect for d in every))
        # Built-in kinds deny; a custom rule says what its kind does.
        self._actions: dict[str, Action] = {}
        for rules in self._custom:
            self._actions.update(rules.actions)
        # Cached results are shared by every team with the same floor.
        self.key: tuple[object, ...] = tuple(rules.key for rules in self._custom)

    def find(self, text: str) -> list[tuple[str, str]]:
        """(kind, value) for each finding in ``text`` or in a wrapping of it.

        Raises `unwrap.UnwrapLimit` for a text wrapped beyond the decoding bounds.
        """
        return unwrap.find(text, self._scan)

    def mark(self, text: str) -> str:
        """``text`` with each match of a deny custom rule replaced by its marker."""
        for rules in self._custom:
            text = rules.mark(text)
        return text

    def action(self, kind: str) -> Action:
        return self._actions.get(kind, "deny")


def _scan_all(scans: tuple[Callable[[str], object], ...], text: str) -> list[Finding]:
    found: list[Finding] = []
    for scan in scans:
        result = scan(text)
        if not isinstance(result, list):
            raise TypeError("a detector of scope EVERY reports findings")
        found.extend(result)
    return found


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
