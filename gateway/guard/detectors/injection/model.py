"""A small logistic-regression model over binary word features.

Weights in ``injection_model.json``, trained by ``bench/train_injection.py``;
it catches the long role-play jailbreaks (DAN and friends) that no phrase
list covers without false positives.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from itertools import repeat
from typing import Final

# The model reads at most this many words, in windows of _MODEL_WINDOW; rules
# read everything. Jailbreak prompts are a few thousand words at most.
_MODEL_MAX_WORDS: Final = 16 * 1024
_MODEL_WINDOW: Final = 2048
_MODEL_MIN_WORDS: Final = 16


@dataclass(frozen=True, slots=True)
class _Model:
    bias: float
    weights: dict[str, float]
    aliases: dict[str, str]
    review_at: float
    deny_at: float

    def score(self, toks: list[str], words: set[str] | None = None) -> float:
        """Probability-like score in [0, 1]: the max over bounded word windows."""
        if len(toks) <= _MODEL_WINDOW and words is not None:
            return self._score_words(words)
        best = 0.0
        for start in range(0, min(len(toks), _MODEL_MAX_WORDS), _MODEL_WINDOW):
            best = max(best, self._score_words(set(toks[start : start + _MODEL_WINDOW])))
        return best

    def _score_words(self, words: set[str]) -> float:
        # A handful of words is no evidence either way (and "ignore ignore
        # ignore" would score on one weight); short attacks are the rules' job.
        if len(words) < _MODEL_MIN_WORDS:
            return 0.0
        if not self.aliases.keys().isdisjoint(words):
            words = {self.aliases.get(w, w) for w in words}
        total = sum(map(self.weights.get, words, repeat(0.0)))
        # Normalised by all distinct words, known or not (as in training), so
        # unfamiliar text (code, other languages) stays near the bias.
        return self._probability(total, len(words))

    def _probability(self, total: float, distinct: int) -> float:
        z = self.bias + total / math.sqrt(distinct)
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def _load_model() -> _Model | None:
    try:
        raw = resources.files(__package__).joinpath("injection_model.json").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return None
    data = json.loads(raw)
    return _Model(
        bias=float(data["bias"]),
        weights={str(k): float(v) for k, v in data["weights"].items()},
        aliases={str(k): str(v) for k, v in data.get("aliases", {}).items()},
        review_at=float(data["review_at"]),
        deny_at=float(data["deny_at"]),
    )


_MODEL: Final = _load_model()
