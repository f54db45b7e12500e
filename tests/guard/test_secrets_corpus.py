"""Detection quality of the secret detector on the labelled public corpora.

Positives must be denied (scan finds something), negatives must not. The floors
sit a little under what the detector reaches, so a regression fails the build.
Run with ``-s`` to see recall and false-positive rate per file and per source rule.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gateway.guard.detectors.secrets import scan
from tests.vectors import corpora

# file -> (minimum recall on positives, maximum false-positive rate on negatives)
FLOORS: dict[str, tuple[float, float]] = {
    "secrets_detect_secrets_tests.jsonl": (0.87, 0.03),
    "secrets_gitleaks_rules.jsonl": (0.96, 0.03),
}


def corpora_dir() -> Path:
    return corpora()


@dataclass
class Score:
    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0
    missed_by_rule: Counter[str] = field(default_factory=Counter)
    flagged_by_rule: Counter[str] = field(default_factory=Counter)

    @property
    def recall(self) -> float:
        return self.tp / max(1, self.tp + self.fn)

    @property
    def fp_rate(self) -> float:
        return self.fp / max(1, self.fp + self.tn)


def _rule(source: str) -> str:
    # "github:owner/repo@commit:path/to/rule_test.py#case" -> "rule_test.py#case"
    return source.rsplit("/", 1)[-1]


def score(path: Path) -> Score:
    result = Score()
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("kind") != "secret":
                continue
            found = bool(scan(row["text"]))
            if row["label"] == "positive":
                if found:
                    result.tp += 1
                else:
                    result.fn += 1
                    result.missed_by_rule[_rule(row["source"])] += 1
            elif found:
                result.fp += 1
                result.flagged_by_rule[_rule(row["source"])] += 1
            else:
                result.tn += 1
    return result


def test_corpora_are_present() -> None:
    # CI has the corpora; their absence is a broken checkout, not a reason to skip.
    root = corpora_dir()
    missing = [name for name in FLOORS if not (root / name).is_file()]
    if missing:
        pytest.fail(f"secret corpora missing under {root}: {missing}")


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_recall_and_false_positive_floor(name: str) -> None:
    path = corpora_dir() / name
    if not path.is_file():
        pytest.fail(f"corpus file missing: {path}")
    result = score(path)
    min_recall, max_fp = FLOORS[name]
    print(
        f"\n{name}: recall {result.recall:.3f} ({result.tp}/{result.tp + result.fn}), "
        f"false positives {result.fp_rate:.3f} ({result.fp}/{result.fp + result.tn})"
    )
    for rule, n in result.missed_by_rule.most_common():
        print(f"  missed  {n:3d}  {rule}")
    for rule, n in result.flagged_by_rule.most_common():
        print(f"  flagged {n:3d}  {rule}")
    assert result.tp + result.fn > 0 and result.fp + result.tn > 0
    assert result.recall >= min_recall, f"{name}: recall {result.recall:.3f} < {min_recall}"
    assert result.fp_rate <= max_fp, f"{name}: FP rate {result.fp_rate:.3f} > {max_fp}"
