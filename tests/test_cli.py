"""The `reefgate` command as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import socket
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


def test_serve_refuses_a_malformed_request_without_echoing_or_logging_it(tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "teams").mkdir(parents=True)
    audit = tmp_path / "audit.jsonl"
    (config / "gateway.yaml").write_text(
        f"listen: {{host: 127.0.0.1, port: 0}}\naudit: {{path: {audit}}}\n"
    )
    (config / "teams" / "default.yaml").write_text("default: true\n")
    token = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"
    proc = subprocess.Popen(
        [str(REEFGATE), "--log-level", "DEBUG", "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        host, port = line.split("listening on http://")[1].split()[0].split(":")
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            conn.sendall(f"POST /openai/v1/models HTTP/1.1\r\nHost: x\r\n{token}\r\n\r\n".encode())
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b" 400 " in head.split(b"\r\n")[0]
    assert json.loads(body)["error"]["code"] == "malformed_request"
    assert token.encode() not in answer
    assert token not in stderr
    assert "BadHttpMessage" in stderr or "InvalidHeader" in stderr, stderr
    assert token not in audit.read_text()
    assert '"category":"malformed_request"' in audit.read_text()


def test_serve_reports_a_fingerprint_key_it_cannot_read(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    key = tmp_path / "short.key"
    key.write_text("abcd\n")
    audit = tmp_path / "a.jsonl"
    (config / "gateway.yaml").write_text(
        f"listen: {{port: 0}}\naudit: {{path: {audit}, fingerprint_key_file: {key}}}\n"
    )
    out = _run("serve", "--config", str(config))
    assert out.returncode == 2
    assert "fingerprint key" in out.stderr
    assert "Traceback" not in out.stderr


def test_python_dash_m() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gateway", "--version"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0
