"""The one interface every detector implements, so the proxy and `reefgate eval` run the same path.

A detector inspects one text and reports either findings (a kind and a span
per value: the secret rules, a team's custom rules) or an assessment (a
decision with its reason: the injection detector). Its scope says which
segments it reads: `EVERY` text that leaves the gateway (the outbound floor,
whose findings deny or hold), or only `UNTRUSTED` text (the inbound check).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol, runtime_checkable

from gateway.guard.detectors.injection import InjectionAssessment
from gateway.guard.findings import Finding


class Scope(StrEnum):
    EVERY = "every"
    UNTRUSTED = "untrusted"


@runtime_checkable
class Detector(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def scope(self) -> Scope: ...

    def inspect(self, text: str) -> list[Finding] | InjectionAssessment: ...
