"""The `reefgate` command as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REEFGATE = Path(sys.executable).with_name("reefgate")


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REEFGATE), *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_console_script_installed() -> None:
    assert REEFGATE.exists(), "pip install -e . must install the reefgate command"
    out = _run("--version")
    assert out.returncode == 0
    assert out.stdout.startswith("reefgate ")


def test_config_validate_ok() -> None:
    out = _run("config", "validate", "config")
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout


def test_config_validate_errors(tmp_path: Path) -> None:
    (tmp_path / "teams").mkdir()
    (tmp_path / "gateway.yaml").write_text("listen: {port: -1}\naudit: {paht: x}\n")
    (tmp_path / "teams" / "x.yaml").write_text("defualt: true\n")
    out = _run("config", "validate", str(tmp_path))
    assert out.returncode != 0
    assert "gateway.yaml: listen.port:" in out.stderr
    assert "gateway.yaml: audit.paht: unknown key" in out.stderr
    assert "x.yaml: defualt: unknown key" in out.stderr


def test_serve_health_and_audit_verify(tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "teams").mkdir(parents=True)
    audit = tmp_path / "audit.jsonl"
    (config / "gateway.yaml").write_text(
        f"listen: {{host: 127.0.0.1, port: 0}}\naudit: {{path: {audit}}}\n"
        "upstreams:\n  openai: {base_url: 'http://127.0.0.1:9'}\n"
    )
    (config / "teams" / "default.yaml").write_text("default: true\n")
    proc = subprocess.Popen(
        [str(REEFGATE), "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on http://" in line, line
        base = line.split("listening on ")[1].split()[0]
        with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
            assert json.load(r)["status"] == "ok"
        with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
            assert r.status == 200
        # One request through the gateway so the audit has an entry (upstream is dead: 502).
        req = urllib.request.Request(
            base + "/openai/v1/chat/completions",
            data=b'{"model":"m","messages":[{"role":"user","content":"hi"}]}',
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req, timeout=15)
        assert info.value.code == 502
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    assert proc.returncode == 0
    out = _run("audit", "verify", str(audit))
    assert out.returncode == 0, out.stderr
    assert "1 entries" in out.stdout
    lines = audit.read_text().splitlines()
    lines[0] = lines[0].replace('"upstream":"openai"', '"upstream":"openaj"')
    audit.write_text("\n".join(lines) + "\n")
    out = _run("audit", "verify", str(audit))
    assert out.returncode == 1
    assert "line 1" in out.stderr


def test_python_dash_m() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gateway", "--version"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0
