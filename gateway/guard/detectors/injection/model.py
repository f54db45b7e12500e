"""A small logistic-regression model over binary word features.

Weights in ``injection_model.json``, trained by ``bench/train_injection.py``;
it catches the long role-play jailbreaks (DAN and friends) that no phrase
list covers without false positives.
"""

from __future__ import annotations

import json
import math
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from importlib import resources
from itertools import repeat
from typing import Final

from gateway.guard.detectors.injection.text import _tokens

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

    @property
    def words(self) -> frozenset[str]:
        """Every word the model reads: those with a weight and the aliased ones."""
        return frozenset(self.weights) | frozenset(self.aliases) | frozenset(self.aliases.values())

    def score(
        self, low: str, known: AbstractSet[str] | None = None, distinct: int = 0, count: int = 0
    ) -> float:
        """Probability-like score in [0, 1] of casefolded text: the max over
        bounded word windows.

        `known`, `distinct`, `count`: when the caller has them, the words of
        `low` among (at least) `words`, its number of distinct words and its
        number of words.
        """
        toks = None
        if known is None:
            toks = _tokens(low)
            known = set(toks)
            distinct, count = len(known), len(toks)
        if count <= _MODEL_WINDOW:
            return self._score_words(known, distinct)
        if toks is None:
            toks = _tokens(low)
        best = 0.0
        for start in range(0, min(len(toks), _MODEL_MAX_WORDS), _MODEL_WINDOW):
            window = set(toks[start : start + _MODEL_WINDOW])
            best = max(best, self._score_words(window, len(window)))
        return best

    def _score_words(self, known: AbstractSet[str], distinct: int) -> float:
        # A handful of words is no evidence either way (and "ignore ignore
        # ignore" would score on one weight); short attacks are the rules' job.
        if distinct < _MODEL_MIN_WORDS:
            return 0.0
        if not self.aliases.keys().isdisjoint(known):
            aliased = {self.aliases.get(w, w) for w in known}
            distinct -= len(known) - len(aliased)
            known = aliased
        # fsum: exact whatever the order of the set, so that every way of
        # finding the known words gives the same score to the last bit.
        total = math.fsum(map(self.weights.get, known, repeat(0.0)))
        # Normalised by all distinct words, known or not (as in training), so
        # unfamiliar text (code, other languages) stays near the bias.
        return self._probability(total, distinct)

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
