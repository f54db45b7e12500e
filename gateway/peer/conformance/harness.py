"""Running vector cases: outcomes, per-file reports, and the printed summary."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Case",
    "CaseResult",
    "FileReport",
    "Mismatch",
    "Relaxed",
    "dig",
    "equal",
    "format_report",
    "recorded_rng",
    "run_cases",
    "unknown",
]

# A vector case is JSON data: its fields are checked where they are used.
Case = Mapping[str, Any]
Status = Literal["pass", "fail", "relaxed"]


class Mismatch(Exception):
    """The implementation's result differs from what the reference recorded."""


@dataclass(frozen=True, slots=True)
class Relaxed:
    """The case differs on purpose: reefgate is deliberately more precise here."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class CaseResult:
    case_id: str
    status: Status
    detail: str = ""  # why it failed, or the relaxation's name and reason


@dataclass(frozen=True, slots=True)
class FileReport:
    name: str
    results: tuple[CaseResult, ...] = ()
    error: str | None = None  # the file could not be run at all

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.status != "fail")

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "fail"]

    @property
    def relaxations(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "relaxed"]

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.results) and not self.failures


Check = Callable[[Case], Relaxed | None]


def run_cases(cases: Sequence[Case], check: Check) -> tuple[CaseResult, ...]:
    """Each case through ``check``: a Mismatch or any other exception fails that case only."""
    results: list[CaseResult] = []
    for case in cases:
        case_id = str(case.get("id", "(no id)"))
        try:
            outcome = check(case)
        except Mismatch as exc:
            results.append(CaseResult(case_id, "fail", str(exc)))
        except Exception as exc:
            results.append(CaseResult(case_id, "fail", f"{type(exc).__name__}: {exc}"))
        else:
            if outcome is None:
                results.append(CaseResult(case_id, "pass"))
            else:
                results.append(CaseResult(case_id, "relaxed", f"{outcome.name}: {outcome.reason}"))
    return tuple(results)


def equal(what: str, got: object, want: object) -> None:
    if got != want:
        raise Mismatch(f"{what}: got {_short(got)}, reference {_short(want)}")


def _short(value: object, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def recorded_rng(outputs_hex: Sequence[str]) -> Callable[[int], bytes]:
    """An rng that hands out the byte strings the reference drew, in order and size."""
    outputs: Iterator[bytes] = (bytes.fromhex(h) for h in outputs_hex)

    def rng(size: int) -> bytes:
        chunk = next(outputs, None)
        if chunk is None or len(chunk) != size:
            raise Mismatch(f"drew {size} random bytes where the reference drew {chunk!r}")
        return chunk

    return rng


def format_report(directory: str, reports: Sequence[FileReport]) -> str:
    width = max((len(r.name) for r in reports), default=10) + 2
    lines = [f"reef conformance: {directory}"]
    for report in reports:
        if report.error is not None:
            lines.append(f"  {report.name:<{width}} ERROR: {report.error}")
            continue
        line = f"  {report.name:<{width}} {report.passed:>4}/{report.total:<4} passed"
        if report.relaxations:
            line += f"  ({len(report.relaxations)} documented relaxations)"
        if report.failures:
            line += f"  FAILED: {', '.join(r.case_id for r in report.failures)}"
        lines.append(line)
    relaxed = [(r.name, c) for r in reports for c in r.relaxations]
    if relaxed:
        lines.append("documented relaxations (the reference denies, reefgate allows on purpose):")
        lines.extend(f"  {c.case_id}  {c.detail}" for _, c in relaxed)
    failed = [(r.name, c) for r in reports for c in r.failures]
    if failed:
        lines.append("failures:")
        lines.extend(f"  {c.case_id} ({name}): {c.detail}" for name, c in failed)
    total = sum(r.total for r in reports)
    passed = sum(r.passed for r in reports)
    bad = sum(1 for r in reports if not r.ok)
    verdict = "all files pass" if bad == 0 else f"{bad} of {len(reports)} files fail"
    lines.append(f"{verdict}: {passed}/{total} cases")
    return "\n".join(lines)


def dig(case: Case, *path: str) -> Any:
    """``case[path[0]][path[1]]...``, or a Mismatch naming the missing field."""
    value: Any = case
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            raise Mismatch(f"the case has no {'.'.join(path)}")
        value = value[key]
    return value


def unknown(case: Case, field: str = "expect") -> Mismatch:
    return Mismatch(f"unknown {field} {case.get(field)!r}: no runner for it")
