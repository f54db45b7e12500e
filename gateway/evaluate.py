"""Detection figures on labelled corpora: precision, recall and false-positive rate.

Rows are `{"text", "label": "positive"|"negative", "kind": "secret"|"injection", ...}`.
A secret row is checked outbound and counts as flagged when denied; an
injection row is checked inbound and counts as flagged when not allowed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    def add(self, positive: bool, flagged: bool) -> None:
        if positive and flagged:
            self.tp += 1
        elif positive:
            self.fn += 1
        elif flagged:
            self.fp += 1
        else:
            self.tn += 1

    @property
    def rows(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def precision(self) -> float | None:
        flagged = self.tp + self.fp
        return self.tp / flagged if flagged else None

    @property
    def recall(self) -> float | None:
        positives = self.tp + self.fn
        return self.tp / positives if positives else None

    @property
    def fpr(self) -> float | None:
        negatives = self.fp + self.tn
        return self.fp / negatives if negatives else None

    def as_dict(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "tp": self.tp,
            "fp": self.fp,
            "tn": self.tn,
            "fn": self.fn,
            "precision": self.precision,
            "recall": self.recall,
            "fpr": self.fpr,
        }


@dataclass
class Report:
    by_file: dict[str, Counts] = field(default_factory=dict)
    by_kind: dict[str, Counts] = field(default_factory=dict)

    def add(self, file: str, kind: str, positive: bool, flagged: bool) -> None:
        self.by_file.setdefault(file, Counts()).add(positive, flagged)
        self.by_kind.setdefault(kind, Counts()).add(positive, flagged)

    def table(self) -> str:
        def pct(value: float | None) -> str:
            return "-" if value is None else f"{value * 100:.1f}%"

        head = (
            f"{'':52} {'rows':>6} {'pos':>5} {'neg':>5} "
            f"{'precision':>9} {'recall':>7} {'FP rate':>7}"
        )
        lines = [head, "-" * len(head)]
        for title, group in (("file", self.by_file), ("kind", self.by_kind)):
            for name, c in group.items():
                label = f"{title} {name}"
                if len(label) > 52:
                    label = "..." + label[-49:]
                lines.append(
                    f"{label:52} {c.rows:>6} {c.tp + c.fn:>5} {c.fp + c.tn:>5} "
                    f"{pct(c.precision):>9} {pct(c.recall):>7} {pct(c.fpr):>7}"
                )
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        return {
            "by_file": {k: v.as_dict() for k, v in self.by_file.items()},
            "by_kind": {k: v.as_dict() for k, v in self.by_kind.items()},
        }


@dataclass(frozen=True, slots=True)
class Row:
    file: str
    text: str
    positive: bool
    kind: str


def read_rows(paths: Iterable[Path]) -> list[Row]:
    rows = []
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    label = obj["label"]
                    if label not in ("positive", "negative"):
                        raise ValueError(f"label {label!r}")
                    rows.append(
                        Row(path.name, str(obj["text"]), label == "positive", str(obj["kind"]))
                    )
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}:{n}: not a corpus row ({exc})") from exc
    return rows


def is_flagged(kind: str, decision: str) -> bool:
    if kind == "secret":
        return decision == "deny"
    return decision != "allow"
