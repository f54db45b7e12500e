"""Where the shared reference data lives: ../shared beside the checkout (as CI lays it out)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def reef_vectors() -> Path:
    path = Path(os.environ.get("REEF_VECTORS", REPO.parent / "shared" / "reef-vectors"))
    if not path.is_dir():
        raise FileNotFoundError(f"Reef vectors not found at {path}; set REEF_VECTORS")
    return path


def corpora() -> Path:
    """The public labelled corpora; REEFGATE_CORPORA overrides the location."""
    return Path(os.environ.get("REEFGATE_CORPORA", REPO.parent / "shared" / "corpora"))


def load_cases(name: str) -> list[dict[str, Any]]:
    data = json.loads((reef_vectors() / name).read_text(encoding="utf-8"))
    cases: list[dict[str, Any]] = data["cases"]
    return cases
