"""`reefgate reef conformance`: every case of every vector file, and what makes it fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main
from gateway.peer.conformance import RUNNERS, FileReport, run_directory, run_file
from gateway.peer.conformance.relaxations import RELAXATIONS, explain
from tests.vectors import load_cases, reef_vectors

FILES = sorted(RUNNERS)
CASE_IDS = [(name, str(case["id"])) for name in FILES for case in load_cases(name)]


@pytest.fixture(scope="module")
def reports() -> dict[str, FileReport]:
    return {report.name: report for report in run_directory(reef_vectors())}


@pytest.mark.parametrize(("name", "case_id"), CASE_IDS, ids=[f"{n}:{c}" for n, c in CASE_IDS])
def test_every_vector_case(reports: dict[str, FileReport], name: str, case_id: str) -> None:
    report = reports[name]
    assert report.error is None
    [result] = [r for r in report.results if r.case_id == case_id]
    assert result.status != "fail", result.detail


def test_every_file_is_run_whole(reports: dict[str, FileReport]) -> None:
    for name in FILES:
        assert reports[name].total == len(load_cases(name)) > 0
    assert set(reports) == set(FILES)


def test_relaxations_are_only_the_documented_checks_cases(reports: dict[str, FileReport]) -> None:
    relaxed = {r.case_id: r.detail for report in reports.values() for r in report.relaxations}
    assert {report.name for report in reports.values() if report.relaxations} == {"checks.json"}
    cases = {c["id"]: c for c in load_cases("checks.json")}
    for case_id, detail in relaxed.items():
        case = cases[case_id]
        # Only where the reference denied, for its entropy rule alone.
        assert case["expect"] == "deny"
        assert case["deterministic"]["findings"] == ["high_entropy_token"]
        name, _, reason = detail.partition(": ")
        assert name in {r.name for r in RELAXATIONS}
        assert reason


def test_cli_passes_on_the_reference_vectors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reef", "conformance", str(reef_vectors())]) == 0
    out = capsys.readouterr().out
    for name in FILES:
        total = len(load_cases(name))
        assert f"{name}" in out
        assert f"{total}/{total}" in out
    assert "documented relaxations" in out
    assert "checks-057  commit_url:" in out
    assert "all files pass" in out


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "vectors"
    shutil.copytree(reef_vectors(), target)
    return target


def _edit(path: Path, case_id: str, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    [case] = [c for c in data["cases"] if c["id"] == case_id]
    change(case)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_cli_names_a_corrupted_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vectors = _copy(tmp_path)

    def flip(case: dict[str, Any]) -> None:
        case["open_result"]["body"]["text"] = "Hello Bob, lunch at one?"

    _edit(vectors / "envelopes.json", "envelopes-001", flip)
    assert main(["reef", "conformance", str(vectors)]) == 1
    out = capsys.readouterr().out
    assert "FAILED: envelopes-001" in out
    assert "envelopes-001 (envelopes.json): open:" in out
    assert "1 of 9 files fail" in out


@pytest.mark.parametrize(
    ("name", "case_id", "field", "value"),
    [
        ("identities.json", "identities-002", "fingerprint_ed25519_only", "d8e3 " * 16),
        ("receipts.json", "receipts-013", "verify", True),
        ("signed-requests.json", "signed-requests-019", "relay_now", 1_784_130_899),
        ("canonical.json", "canonical-001", "sha256", "0" * 64),
        ("audit.json", "audit-015", "verifyCheckpoint", True),
        ("digests.json", "digests-001", "approvalDigest", "0" * 64),
        ("verdicts.json", "verdicts-001", "expect", "admitted-ish"),
    ],
)
def test_each_runner_catches_a_wrong_record(
    tmp_path: Path, name: str, case_id: str, field: str, value: object
) -> None:
    vectors = _copy(tmp_path)
    _edit(vectors / name, case_id, lambda case: case.__setitem__(field, value))
    report = run_file(vectors / name)
    assert [r.case_id for r in report.failures] == [case_id]


def test_a_relaxation_must_explain_the_whole_deny(tmp_path: Path) -> None:
    # A commit URL next to a bare random token: the URL does not excuse the token.
    vectors = _copy(tmp_path)

    def add_token(case: dict[str, Any]) -> None:
        case["input"]["text"] += " q83vEjRWeJq83vEjRWeJq83vEjRWeJq8Ab12"

    _edit(vectors / "checks.json", "checks-057", add_token)
    report = run_file(vectors / "checks.json")
    assert [r.case_id for r in report.failures] == ["checks-057"]
    assert "reefgate allows" in report.failures[0].detail


def test_reefgate_denying_what_the_reference_allows_fails(tmp_path: Path) -> None:
    vectors = _copy(tmp_path)

    def leak(case: dict[str, Any]) -> None:
        case["input"]["text"] = "use ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"

    _edit(vectors / "checks.json", "checks-004", leak)
    report = run_file(vectors / "checks.json")
    assert [r.case_id for r in report.failures] == ["checks-004"]
    assert "reefgate denies" in report.failures[0].detail


def test_explain_never_excuses_a_concrete_secret() -> None:
    url = "https://github.com/openclaw/reef/commit/722f5b0dd8d897db6b23d503ac85b509ecc142c3"
    assert explain(url, ["high_entropy_token"]) is not None
    assert explain(url, ["github_token", "high_entropy_token"]) is None
    assert explain(url, ["too_large"]) is None
    assert explain("no pattern here", ["high_entropy_token"]) is None
    assert explain("sha " + "ab" * 20 + " ok", ["high_entropy_token"]) is not None
    assert explain("mixed " + "aB" * 20, ["high_entropy_token"]) is None


def test_missing_unknown_and_unreadable_files(tmp_path: Path) -> None:
    vectors = _copy(tmp_path)
    (vectors / "receipts.json").unlink()
    (vectors / "extra.json").write_text('{"cases": []}', encoding="utf-8")
    (vectors / "audit.json").write_text("{not json", encoding="utf-8")
    reports = {r.name: r for r in run_directory(vectors)}
    assert reports["receipts.json"].error == "missing"
    assert reports["extra.json"].error == "no runner for this vector file"
    assert (reports["audit.json"].error or "").startswith("cannot read")
    assert not any(reports[n].ok for n in ("receipts.json", "extra.json", "audit.json"))


def test_unknown_case_kind_fails(tmp_path: Path) -> None:
    vectors = _copy(tmp_path)
    _edit(vectors / "identities.json", "identities-011", lambda c: c.__setitem__("kind", "new"))
    report = run_file(vectors / "identities.json")
    assert [r.case_id for r in report.failures] == ["identities-011"]
    assert "unknown kind" in report.failures[0].detail


def test_cli_refuses_a_missing_directory(tmp_path: Path) -> None:
    assert main(["reef", "conformance", str(tmp_path / "nope")]) == 2
