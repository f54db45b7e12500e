"""The README's secret coverage table is the generated one, so it cannot drift from the rules."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_readme_holds_the_generated_coverage_table() -> None:
    generated = (ROOT / "gateway/guard/detectors/secrets/COVERAGE.md").read_text()
    table = generated[generated.index("| kind | covered | sample |") :].strip()
    assert table in (ROOT / "README.md").read_text()
