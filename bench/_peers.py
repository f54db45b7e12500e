"""Peers to compare against: nginx (Debian) and the LiteLLM proxy (PyPI, own virtualenv).

Each `prepare_*` returns either what is needed to start the peer or the
reason it cannot run; installs are bounded in time and never attempted with
installs disabled. The LiteLLM virtualenv is kept under var/bench so that
reruns start at once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench._common import PROXY_CPU, VAR, Service, Services, free_port

LITELLM_SPEC = os.environ.get("REEFGATE_BENCH_LITELLM_SPEC", "litellm[proxy]==1.108.7")
LITELLM_VENV = Path(os.environ.get("REEFGATE_BENCH_LITELLM_VENV", str(VAR / "litellm-venv")))
LITELLM_KEY = "sk-bench-master-0123456789abcdef"


@dataclass
class Prepared:
    ok: bool
    reason: str = ""
    path: str = ""


def _run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> tuple[bool, str]:
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f}s"
    except OSError as exc:
        return False, str(exc)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    return proc.returncode == 0, " | ".join(tail)


def apt_install(package: str, binary: str, install: bool, timeout: float = 300) -> Prepared:
    """The binary's path, installing the Debian package first when allowed."""
    found = shutil.which(binary) or next(
        (p for p in (f"/usr/sbin/{binary}", f"/usr/bin/{binary}") if Path(p).exists()), None
    )
    if found:
        return Prepared(True, path=found)
    if not install:
        return Prepared(False, f"{binary} is not installed (installs disabled)")
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return Prepared(False, f"{binary} is not installed and apt-get as root is not available")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    ok, out = _run(["apt-get", "install", "-y", "-q", package], timeout, env)
    if not ok:
        # A fresh machine has no package lists yet.
        _run(["apt-get", "update", "-q"], timeout, env)
        ok, out = _run(["apt-get", "install", "-y", "-q", package], timeout, env)
    found = shutil.which(binary) or (
        f"/usr/sbin/{binary}" if Path(f"/usr/sbin/{binary}").exists() else None
    )
    if not ok or not found:
        return Prepared(False, f"apt-get install {package} failed: {out[:200]}")
    return Prepared(True, path=found)


# -- nginx --


def nginx_conf(dir_: Path, port: int, upstream_port: int) -> Path:
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (dir_ / sub).mkdir(parents=True, exist_ok=True)
    user = "user root root;" if os.geteuid() == 0 else ""
    conf = dir_ / "nginx.conf"
    conf.write_text(
        f"""daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 65536;
{user}
pid {dir_}/nginx.pid;
error_log {dir_}/error.log warn;
events {{ worker_connections 16384; }}
http {{
  access_log off;
  client_body_temp_path {dir_}/client_body;
  proxy_temp_path {dir_}/proxy;
  fastcgi_temp_path {dir_}/fastcgi;
  uwsgi_temp_path {dir_}/uwsgi;
  scgi_temp_path {dir_}/scgi;
  client_max_body_size 64m;
  client_body_buffer_size 1m;
  keepalive_requests 1000000;
  upstream fake {{
    server 127.0.0.1:{upstream_port};
    keepalive 512;
    keepalive_requests 1000000;
  }}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location /openai/ {{
      proxy_pass http://fake/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 600s;
    }}
  }}
}}
"""
    )
    return conf


def start_nginx(
    services: Services, binary: str, dir_: Path, upstream_port: int, timeout: float = 20
) -> Service:
    dir_.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = nginx_conf(dir_, port, upstream_port)
    svc = services.spawn(
        "nginx",
        [binary, "-p", str(dir_), "-c", str(conf), "-e", str(dir_ / "error.log")],
        cpu=PROXY_CPU,
    )
    svc.port = port
    services.wait_http(svc, "/openai/v1/models", timeout)
    return svc


# -- LiteLLM --


def prepare_litellm(install: bool, timeout: float = 900) -> Prepared:
    binary = LITELLM_VENV / "bin" / "litellm"
    if binary.exists():
        return Prepared(True, path=str(binary))
    if not install:
        return Prepared(False, f"LiteLLM is not installed in {LITELLM_VENV} (installs disabled)")
    base = getattr(sys, "_base_executable", sys.executable)
    LITELLM_VENV.parent.mkdir(parents=True, exist_ok=True)
    ok, out = _run([base, "-m", "venv", str(LITELLM_VENV)], 120)
    if ok:
        pip = str(LITELLM_VENV / "bin" / "pip")
        ok, out = _run([pip, "install", "-q", LITELLM_SPEC], timeout)
    if not ok or not binary.exists():
        # A half-made virtualenv would look cached next time.
        shutil.rmtree(LITELLM_VENV, ignore_errors=True)
        return Prepared(False, f"pip install {LITELLM_SPEC} failed: {out[:200]}")
    return Prepared(True, path=str(binary))


def start_litellm(
    services: Services,
    binary: str,
    dir_: Path,
    upstream_url: str,
    model: str,
    *,
    cpu: int | None = PROXY_CPU,
    timeout: float = 180,
) -> Service:
    dir_.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = dir_ / "litellm.yaml"
    # An OpenAI-compatible model on the fake upstream, no guardrails, no callbacks.
    conf.write_text(
        f"""model_list:
  - model_name: {model}
    litellm_params:
      model: openai/{model}
      api_base: {upstream_url}/v1
      api_key: sk-fake-upstream
litellm_settings:
  telemetry: false
"""
    )
    svc = services.spawn(
        "litellm",
        [
            binary,
            "--config",
            str(conf),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--num_workers",
            "1",
        ],
        cpu=cpu,
        cwd=dir_,
        env={
            "LITELLM_MASTER_KEY": LITELLM_KEY,
            # No fetch of the model price list from the internet at start.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY": "False",
            "NO_DOCKER": "1",
        },
    )
    svc.port = port
    return svc


def wait_litellm(services: Services, svc: Service, timeout: float = 180) -> None:
    services.wait_http(svc, "/health/liveliness", timeout)
