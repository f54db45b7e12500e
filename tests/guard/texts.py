"""Texts for the differential tests of the compiled detectors and their Python twins."""

from __future__ import annotations

import json
import random

from bench._corpus import AgentTurns
from gateway.evaluate import read_rows
from tests.guard import test_floor_differential as floor_texts
from tests.vectors import corpora


def differential_texts(tag: str, seed: int = 3, generated: int = 3000) -> list[str]:
    """Every labelled corpus text, the bench's 256 agent turns' message texts,
    and `generated` each of the floor differential's two kinds of seeded texts."""
    texts = [row.text for row in read_rows(sorted(corpora().glob("*.jsonl")))]
    assert texts, f"no corpora under {corpora()}"
    turns = AgentTurns()
    for i in range(256):
        for message in json.loads(turns.body(i, tag, False))["messages"]:
            if isinstance(message.get("content"), str):
                texts.append(message["content"])
    rng = random.Random(seed)
    texts += [floor_texts._text(rng) for _ in range(generated)]
    texts += [floor_texts._run_text(rng) for _ in range(generated)]
    return texts
