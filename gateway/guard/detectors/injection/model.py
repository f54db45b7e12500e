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
from typing import Final

from gateway.guard.detectors.injection.text import _tokens, feature_sum

# The model reads at most this many words, in windows of _MODEL_WINDOW; rules
# read everything. Jailbreak prompts are a few thousand words at most.
_MODEL_MAX_WORDS: Final = 16 * 1024
_MODEL_WINDOW: Final = 2048
_MODEL_MIN_WORDS: Final = 16


# Weights are trained to four decimal places and summed as integers in these
# units: an integer sum is the same in any order, so every way of finding a
# text's words (in C or in Python, window by window) gives the same score.
_UNITS_PER_WEIGHT: Final = 10_000


def _units(weights: dict[str, float]) -> dict[str, int]:
    units = {w: round(v * _UNITS_PER_WEIGHT) for w, v in weights.items()}
    off = [w for w, v in weights.items() if abs(v * _UNITS_PER_WEIGHT - units[w]) > 1e-6]
    if off:
        raise ValueError(f"model weights must have four decimal places at most: {off[:3]}")
    return units


@dataclass(frozen=True, slots=True)
class _Model:
    bias: float
    units: dict[str, int]  # weights in 1/_UNITS_PER_WEIGHT
    aliases: dict[str, str]
    review_at: float
    deny_at: float

    @classmethod
    def of(
        cls,
        bias: float,
        weights: dict[str, float],
        aliases: dict[str, str],
        review_at: float,
        deny_at: float,
    ) -> _Model:
        return cls(bias, _units(weights), aliases, review_at, deny_at)

    def score(self, low: str, scanned: tuple[int, int, int, int] | None = None) -> float:
        """Probability-like score in [0, 1] of casefolded text: the max over
        bounded word windows.

        `scanned`: when the caller has read `low` with a vocabulary holding
        this model's weights and aliases, its numbers of distinct words, of
        words and of distinct features, and the sum of the features' weights.
        """
        if scanned is not None and scanned[1] <= _MODEL_WINDOW:
            distinct, _, features, total = scanned
            return self._score(distinct, features, total)
        toks = _tokens(low)
        best = 0.0
        for start in range(0, min(len(toks), _MODEL_MAX_WORDS), _MODEL_WINDOW):
            window = set(toks[start : start + _MODEL_WINDOW])
            features, total = feature_sum(window, self.units, self.aliases)
            best = max(best, self._score(len(window), features, total))
        return best

    def _score(self, distinct: int, features: int, total: int) -> float:
        # A handful of words is no evidence either way (and "ignore ignore
        # ignore" would score on one weight); short attacks are the rules' job.
        if distinct < _MODEL_MIN_WORDS:
            return 0.0
        # Normalised by all distinct features, known or not (as in training),
        # so unfamiliar text (code, other languages) stays near the bias.
        z = self.bias + total / _UNITS_PER_WEIGHT / math.sqrt(features)
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def _load_model() -> _Model | None:
    try:
        raw = resources.files(__package__).joinpath("injection_model.json").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return None
    data = json.loads(raw)
    return _Model.of(
        bias=float(data["bias"]),
        weights={str(k): float(v) for k, v in data["weights"].items()},
        aliases={str(k): str(v) for k, v in data.get("aliases", {}).items()},
        review_at=float(data["review_at"]),
        deny_at=float(data["deny_at"]),
    )


_MODEL: Final = _load_model()
