"""The built-in detectors, behind the one `Detector` interface."""

from __future__ import annotations

from gateway.guard.detectors import injection, secrets
from gateway.guard.detectors.base import Scope
from gateway.guard.findings import Finding


class SecretRules:
    """Credentials, tokens, passwords and private keys: every finding denies."""

    name = "secrets"
    scope = Scope.EVERY

    def inspect(self, text: str) -> list[Finding]:
        return secrets.scan(text)


class InjectionCheck:
    """Instructions planted for the model in text from outside the agent's trust boundary."""

    name = "injection"
    scope = Scope.UNTRUSTED

    def inspect(self, text: str) -> injection.InjectionAssessment:
        return injection.assess(text)


SECRETS = SecretRules()
INJECTION = InjectionCheck()
