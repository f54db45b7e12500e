"""Secret-detector throughput, next to detect-secrets on the same text in the same process.

Corpora (seeded, so every run scans the same text):
  (i)   1 MB of clean mixed text: code, logs, prose and config; no secrets,
        but the ids, hashes, UUIDs and `$VAR` references tool output is full of
  (ii)  the same with a well-formed fake secret line about every 8 KB
  (iii) a 128k-token agent conversation (~500 KB), scanned one message text at
        a time, as the gateway scans segments

reefgate: `gateway.guard.floor.find` over each text, the secret floor exactly as
the gateway runs it (the scan of the text and of what it says once unwrapped);
`secrets.scan` alone is reported beside it for reference.
detect-secrets: every default plugin and default filter over every line,
through `detect_secrets.core.scan._process_line_based_plugins`, the loop
`detect-secrets scan` runs on a text file, minus its file I/O and minus the
second "eager" pass it makes over files without findings. That is the fair
equivalent of one scan of the text, and if anything flatters detect-secrets.

Also shown, without a target: the embedded injection detector
(`injection.assess`) on the clean text in 4 KB pieces, since the gateway runs
it on every new tool result, and on the same pieces as JSON tool output
(`{"stdout": ..., "exit_code": 0}`), whose escapes it undoes first.

MB here is 10^6 characters (the corpora are ASCII, so also bytes).
"""

from __future__ import annotations

import functools
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench import _corpus as corpus
from bench._common import (
    Report,
    Target,
    clean_number,
    describe_machine,
    machine_info,
    median,
    parse_options,
    progress,
    table,
    targets_table,
)

MB = 1_000_000


def _time(fn: Callable[[], int], repeats: int) -> tuple[float, int]:
    """Median seconds over `repeats` runs, and the findings of the last."""
    times: list[float] = []
    found = 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        found = fn()
        times.append(time.perf_counter() - t0)
    return median(times), found


def reefgate_scanner() -> Callable[[Sequence[str]], int]:
    from gateway.guard import floor

    def scan(texts: Sequence[str]) -> int:
        return sum(len(floor.find(t)) for t in texts)

    return scan


def bare_scanner() -> Callable[[Sequence[str]], int]:
    from gateway.guard.detectors import secrets

    def scan(texts: Sequence[str]) -> int:
        return sum(len(secrets.scan(t)) for t in texts)

    return scan


def detect_secrets_scanner() -> tuple[Callable[[Sequence[str]], int] | None, str]:
    try:
        from detect_secrets.core import scan as ds_scan
        from detect_secrets.settings import default_settings
    except ImportError:
        return None, "detect-secrets is not installed (pip install detect-secrets)"

    def scan(texts: Sequence[str]) -> int:
        found = 0
        with default_settings():
            for i, text in enumerate(texts):
                lines = list(enumerate(text.splitlines(), start=1))
                found += sum(
                    1 for _ in ds_scan._process_line_based_plugins(lines, filename=f"t{i}.txt")
                )
        return found

    try:
        import detect_secrets

        version = getattr(detect_secrets, "__version__", "")
    except ImportError:  # pragma: no cover - imported just above
        version = ""
    if not version:
        from importlib.metadata import version as dist_version

        version = dist_version("detect-secrets")
    return scan, version


def main(argv: Sequence[str]) -> int:
    opts = parse_options("scan", argv)
    if opts.smoke:
        size, conv_size, repeats, ds_share = 40_000, 20_000, 1, 1.0
    elif opts.quick:
        size, conv_size, repeats, ds_share = 1_000_000, 500_000, 3, 0.25
    else:
        size, conv_size, repeats, ds_share = 1_000_000, 500_000, 7, 1.0

    progress("generating corpora")
    clean = corpus.clean_text(size)
    dirty, planted = corpus.with_secrets(clean, 8_000)
    messages = corpus.conversation(random.Random(corpus.SEED + 3), conv_size)
    conv_texts = corpus.message_texts(messages)
    conv_planted = 0
    rng = random.Random(corpus.SEED + 4)
    # A few secrets in tool results, as a real long session would have.
    for i in range(5, len(conv_texts), 40):
        conv_texts[i] = conv_texts[i] + "\n" + corpus.secret(rng) + "\n"
        conv_planted += 1
    corpora: list[tuple[str, str, list[str], int]] = [
        ("clean", "(i) clean mixed text", [clean], 0),
        ("secrets", "(ii) same, secrets sprinkled", [dirty], planted),
        (
            "conversation",
            f"(iii) 128k-token conversation, {len(messages)} messages",
            conv_texts,
            conv_planted,
        ),
    ]

    reef = reefgate_scanner()
    ds, ds_version = detect_secrets_scanner()
    reef(["warm up the compiled patterns and caches " * 20])
    rows: list[list[object]] = []
    results: dict[str, dict[str, Any]] = {}
    for key, label, texts, planted_here in corpora:
        chars = sum(len(t) for t in texts)
        progress(f"reefgate {key}")
        seconds, found = _time(functools.partial(reef, texts), repeats)
        reef_mb_s = chars / MB / seconds
        entry: dict[str, Any] = {
            "chars": chars,
            "planted": planted_here,
            "reefgate_mb_s": clean_number(reef_mb_s, 3),
            "reefgate_findings": found,
        }
        ds_mb_s: float | None = None
        ds_found: int | None = None
        if ds is not None:
            progress(f"detect-secrets {key}")
            # detect-secrets is slow; in --quick only a share of each text is timed.
            part = [t[: max(1, int(len(t) * ds_share))] for t in texts]
            part_chars = sum(len(t) for t in part)
            ds_seconds, ds_found = _time(functools.partial(ds, part), 1)
            ds_mb_s = part_chars / MB / ds_seconds
            entry["detect_secrets_chars"] = part_chars
        entry["detect_secrets_mb_s"] = clean_number(ds_mb_s, 4)
        entry["detect_secrets_findings"] = ds_found
        ratio = reef_mb_s / ds_mb_s if ds_mb_s else None
        entry["vs_detect_secrets"] = clean_number(ratio, 2)
        results[key] = entry
        rows.append([label, chars, planted_here, reef_mb_s, found, ds_mb_s, ds_found, ratio])

    progress("secrets.scan alone")
    bare_seconds, _ = _time(functools.partial(bare_scanner(), [clean]), repeats)
    bare_mb_s = len(clean) / MB / bare_seconds

    progress("injection detector")
    from gateway.guard.detectors import injection

    pieces = [clean[i : i + 4096] for i in range(0, len(clean), 4096)]
    inj_seconds, _ = _time(lambda: sum(1 for p in pieces if injection.assess(p).decision), 1)
    inj_mb_s = len(clean) / MB / inj_seconds
    # Tool results often arrive as JSON (a command's output in a string
    # member): the detector then reads the text with its escapes undone.
    wrapped = [json.dumps({"stdout": p, "exit_code": 0}) for p in pieces]
    inj_json_seconds, _ = _time(lambda: sum(1 for p in wrapped if injection.assess(p).decision), 1)
    inj_json_mb_s = sum(map(len, wrapped)) / MB / inj_json_seconds

    clean_mb_s = results["clean"]["reefgate_mb_s"]
    vs = results["clean"]["vs_detect_secrets"]
    reasons: dict[str, str] = {}
    if vs is None:
        reasons["vs_detect_secrets"] = ds_version if ds is None else "detect-secrets failed"
    rep = Report("scan: secret floor throughput, reefgate vs detect-secrets")
    info = machine_info()
    rep.add(
        "setup",
        "\n".join(
            [
                f"mode {opts.mode}; {describe_machine(info)}; one thread; "
                f"load average {info['loadavg_1m']:.2f}; nice {info['nice']}",
                f"reefgate: floor.find (the scan, unwrapping included) per text, "
                f"median of {repeats} run(s)",
                (
                    f"detect-secrets {ds_version}: default plugins and filters, line by line "
                    f"(_process_line_based_plugins), 1 run over "
                    f"{'all' if ds_share == 1 else f'the first {ds_share:.0%} of'} each corpus"
                    if ds is not None
                    else f"detect-secrets: NOT RUN - {ds_version}"
                ),
                "MB = 10^6 characters",
            ]
        ),
    )
    rep.add(
        "throughput",
        table(
            [
                "corpus",
                "chars",
                "planted",
                "reefgate MB/s",
                "found",
                "detect-secrets MB/s",
                "found",
                "x detect-secrets",
            ],
            rows,
            digits=3,
        ),
    )
    rep.add(
        "for reference (no target)",
        table(
            ["detector", "corpus", "MB/s"],
            [
                ["secrets.scan alone, no unwrapping", "(i) clean mixed text", bare_mb_s],
                ["injection.assess, 4 KB pieces", "(i) clean mixed text", inj_mb_s],
                [
                    "injection.assess, 4 KB pieces as JSON tool output",
                    "(i) clean mixed text",
                    inj_json_mb_s,
                ],
            ],
            digits=3,
        ),
    )
    targets = [
        Target("scan throughput, clean text", clean_mb_s, ">=", 50, "MB/s"),
        Target(
            "x detect-secrets, clean text", vs, ">=", 100, note=reasons.get("vs_detect_secrets", "")
        ),
    ]
    rep.add("targets", targets_table(targets))
    rep.data = {
        "benchmark": "scan",
        "mode": opts.mode,
        "clean_mb_s": clean_mb_s,
        "vs_detect_secrets": vs,
        "secrets_mb_s": results["secrets"]["reefgate_mb_s"],
        "conversation_mb_s": results["conversation"]["reefgate_mb_s"],
        "scan_alone_mb_s": clean_number(bare_mb_s, 3),
        "injection_assess_mb_s": clean_number(inj_mb_s, 3),
        "injection_assess_json_mb_s": clean_number(inj_json_mb_s, 3),
        "detect_secrets_version": ds_version if ds is not None else None,
        "corpora": results,
        "targets": [
            {
                "name": t.name,
                "value": t.value,
                "goal": f"{t.op} {t.threshold}",
                "verdict": t.verdict,
            }
            for t in targets
        ],
        "machine": info,
        "null_reasons": reasons,
    }
    rep.emit(opts.json)
    return 0
