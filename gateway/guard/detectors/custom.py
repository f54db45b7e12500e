"""A team's own rules (`detectors.custom`): a codename, an internal hostname, a customer-id format.

Each rule is a kind, an RE2 pattern and a decision. They run with the built-in
secret rules in one pass of the floor, on the text and on what it decodes to,
so a codename in base64 is found like a key in base64 is.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.config.models import CustomRule
from gateway.guard import rx
from gateway.guard.decision import Action
from gateway.guard.detectors.base import Scope
from gateway.guard.findings import Finding


class CustomRules:
    name = "custom"
    scope = Scope.EVERY

    def __init__(self, rules: Sequence[CustomRule]) -> None:
        self._rules = [(rule.kind, rx.compile(rule.pattern)) for rule in rules]
        self.actions: dict[str, Action] = {rule.kind: rule.decision for rule in rules}
        # The rules' identity: teams with the same rules share cached results.
        self.key = tuple((rule.kind, rule.pattern, rule.decision) for rule in rules)

    def mark(self, text: str) -> str:
        """``text`` with each match of a deny rule replaced by ``[REDACTED:<kind>]``."""
        for kind, pattern in self._rules:
            if self.actions[kind] == "deny" and pattern.search(text) is not None:
                text = pattern.sub(f"[REDACTED:{kind}]", text)
        return text

    def inspect(self, text: str) -> list[Finding]:
        found: list[Finding] = []
        for kind, pattern in self._rules:
            found.extend(Finding(kind, m.start(), m.end()) for m in pattern.finditer(text))
        return found
