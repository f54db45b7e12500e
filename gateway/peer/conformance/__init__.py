"""Conformance with the Reef reference: every case of every vector file, against reefgate.

Each vector file has a runner that feeds its cases to the real implementation
(`gateway.peer` for the protocol, and the gateway's own canonical JSON,
approval digests, audit chain and verdict admission for the rest) and
compares with what the reference recorded. `reefgate reef conformance DIR`
prints the report; tests call `run_directory` in-process.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.peer.conformance import (
    audit,
    canonical,
    checks,
    digests,
    envelopes,
    identities,
    receipts,
    requests,
    verdicts,
)
from gateway.peer.conformance.harness import (
    Case,
    CaseResult,
    Check,
    FileReport,
    format_report,
    run_cases,
)

__all__ = ["RUNNERS", "CaseResult", "FileReport", "format_report", "run_directory", "run_file"]

Runner = Callable[[Mapping[str, Any]], tuple[CaseResult, ...]]


def _each(check: Check) -> Runner:
    def run(data: Mapping[str, Any]) -> tuple[CaseResult, ...]:
        cases: Sequence[Case] = data["cases"]
        return run_cases(cases, check)

    return run


RUNNERS: dict[str, Runner] = {
    "canonical.json": _each(canonical.check),
    "digests.json": _each(digests.check),
    "audit.json": _each(audit.check),
    "verdicts.json": verdicts.run,
    "checks.json": _each(checks.check),
    "identities.json": _each(identities.check),
    "envelopes.json": _each(envelopes.check),
    "signed-requests.json": requests.run,
    "receipts.json": _each(receipts.check),
}


def run_file(path: Path) -> FileReport:
    runner = RUNNERS.get(path.name)
    if runner is None:
        return FileReport(path.name, error="no runner for this vector file")
    if not path.is_file():
        return FileReport(path.name, error="missing")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
            return FileReport(path.name, error="not a vector file (no cases list)")
        if not all(isinstance(case, dict) for case in data["cases"]):
            return FileReport(path.name, error="a case is not a JSON object")
        results = runner(data)
    except (OSError, ValueError) as exc:
        return FileReport(path.name, error=f"cannot read: {exc}")
    return FileReport(path.name, results)


def run_directory(directory: Path) -> list[FileReport]:
    """Every known vector file (a missing one is reported) and every other .json file in it."""
    names = set(RUNNERS) | {p.name for p in directory.glob("*.json")}
    return [run_file(directory / name) for name in sorted(names)]
