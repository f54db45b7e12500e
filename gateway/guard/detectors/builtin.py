"""The built-in detectors, behind the one `Detector` interface."""

from __future__ import annotations

from types import ModuleType
from typing import Final

from gateway.guard.detectors import injection, secrets
from gateway.guard.detectors.base import Scope
from gateway.guard.findings import Finding

# The modules as plain objects, so that compiled code looks their functions
# up at each call: `bench/ablated.py` and tests replace them there.
_SECRETS: Final[ModuleType] = secrets
_INJECTION: Final[ModuleType] = injection


class SecretRules:
    """Credentials, tokens, passwords and private keys: every finding denies."""

    name = "secrets"
    scope = Scope.EVERY

    def inspect(self, text: str) -> list[Finding]:
        found: list[Finding] = _SECRETS.scan(text)
        return found


class InjectionCheck:
    """Instructions planted for the model in text from outside the agent's trust boundary."""

    name = "injection"
    scope = Scope.UNTRUSTED

    def inspect(self, text: str) -> injection.InjectionAssessment:
        assessment: injection.InjectionAssessment = _INJECTION.assess(text)
        return assessment


SECRETS: Final = SecretRules()
INJECTION: Final = InjectionCheck()
