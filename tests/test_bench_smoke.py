"""Smoke of the benchmarks: the plumbing runs and the JSON has its keys.

No timing is asserted (CI machines vary and share their cores). Installs are
disabled, so a peer that is not already on the machine (nginx, wrk, LiteLLM,
detect-secrets) reports null with a reason instead of being installed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

KEYS = {
    "overhead": [
        "added_p50_ms_c1",
        "added_p50_c1_vs_bare",
        "ttfb_added_ms_c1",
        "rps_vs_bare_c50",
        "rps_vs_litellm_c10",
    ],
    "scan": ["clean_mb_s", "vs_detect_secrets"],
    "conversation": ["bytes_scanned_over_unique", "classifier_calls_per_turn"],
    "memory": ["rss_mb_1000_streams"],
    "breakdown": [
        "rps_vs_bare_c50",
        "rps_vs_bare_c50_without_guard",
        "added_p50_c1_vs_bare",
        "inspect_us_in_server_c50",
    ],
    "instructions": ["ratio_vs_bare", "ratio_vs_bare_without_guard", "ratio_vs_bare_stream"],
    "ttft": [
        "ttft_added_ms",
        "ttft_added_vs_bare_ms",
        "ttft_ratio_vs_direct",
        "whole_added_ms",
        "tool_call_added_ms",
    ],
}
# Figures per round, as lists (one per round measured), with the median they give.
ROUNDS = {
    "overhead": [
        ("rps_vs_bare_c50_rounds", "rps_vs_bare_c50"),
        ("rps_vs_bare_c50_stream_rounds", "rps_vs_bare_c50_stream"),
    ],
}
# Per-server figures, as maps from server to value, filled when the bench could run.
MAPS = {
    "instructions": [
        "instructions_per_request",
        "l1_misses_per_request",
        "last_level_misses_per_request",
    ],
}


def _run(name: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", name, "--smoke", "--json", "--no-install"],
        cwd=ROOT,
        env={**os.environ, "REEFGATE_BENCH_NO_INSTALL": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    last = proc.stdout.strip().splitlines()[-1]
    data = json.loads(last)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("name", list(KEYS))
def test_benchmark_smoke(name: str) -> None:
    data = _run(name)
    assert data["benchmark"] == name
    assert data["mode"] == "smoke"
    reasons = data["null_reasons"]
    assert isinstance(reasons, dict)
    for key in KEYS[name]:
        assert key in data, key
        value = data[key]
        if value is None:
            assert isinstance(reasons.get(key), str), f"{key} is null without a reason"
            assert reasons[key]
        else:
            assert isinstance(value, int | float), (key, value)
            assert not isinstance(value, bool)
            assert math.isfinite(value), (key, value)
    for key in MAPS.get(name, []):
        per_server = data[key]
        assert isinstance(per_server, dict), key
        if data["ratio_vs_bare"] is not None:
            assert per_server["bare"] > 0 and per_server["reefgate"] > 0, (key, per_server)
    for key, median_key in ROUNDS.get(name, []):
        rounds = data[key]
        assert isinstance(rounds, list), key
        assert all(isinstance(r, float) and r > 0 for r in rounds), (key, rounds)
        if data[median_key] is not None:
            # Smoke runs one round: its ratio is the median's.
            assert rounds == [pytest.approx(data[median_key], abs=1e-3)], (key, rounds)
    machine = data["machine"]
    assert isinstance(machine, dict)
    assert machine["python_loop_ns"] > 0
    targets = data["targets"]
    assert isinstance(targets, list)
    assert targets
    for target in targets:
        assert target["verdict"] in ("PASS", "MISS", "n/a")
