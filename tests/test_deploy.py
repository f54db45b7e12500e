"""The container image and the sidecar examples in deploy/, checked without a container runtime.

The image cannot be built where these tests run, so they check its pieces: the
Dockerfile's instructions, the files it copies, the pins it installs, and that
the example configs in deploy/ pass the gateway's own config loader and wire
the agent to the gateway the way the README says (HTTPS_PROXY, the CA
certificate, key custody) without handing the agent the CA key or the
provider keys. The last test runs the compose example's pieces on this machine
instead of in containers: the init step, the image's command, and a client
with the agent's environment.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from gateway.cli import build_parser
from gateway.config.loader import LoadedConfig, collect
from gateway.config.models import AdminListen, ForwardListen, Listen

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
COMPOSE = DEPLOY / "docker-compose.yml"
CA_ENV = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
# The image's working directory: relative paths in the config resolve against it.
APP = PurePosixPath("/app")


# -- the Dockerfile --


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    stage: int  # index of the FROM it follows; -1 before the first

    def exec_form(self) -> list[str]:
        value = json.loads(self.args)
        assert isinstance(value, list), self
        assert all(isinstance(v, str) for v in value), self
        return [str(v) for v in value]


def _instructions(text: str) -> list[Instruction]:
    out: list[Instruction] = []
    stage = -1
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        # Comment lines are dropped, also inside a continued instruction.
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        out.append(Instruction(keyword, args.strip(), stage))
    assert not pending, "the Dockerfile ends in a line continuation"
    return out


DOCKERFILE = _instructions((REPO / "Dockerfile").read_text())


def _all(keyword: str) -> list[Instruction]:
    return [i for i in DOCKERFILE if i.keyword == keyword]


def _final(keyword: str) -> list[Instruction]:
    last = max(i.stage for i in DOCKERFILE)
    return [i for i in DOCKERFILE if i.keyword == keyword and i.stage == last]


def _global_args() -> dict[str, str]:
    args = {}
    for i in DOCKERFILE:
        if i.keyword == "ARG" and i.stage == -1:
            name, _, default = i.args.partition("=")
            args[name] = default
    return args


def _expand(value: str, args: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        assert name in args, f"${name} has no default"
        return args[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, value)


def _base_images() -> list[str]:
    """The image reference of every FROM that is not an earlier stage."""
    args = _global_args()
    stages: set[str] = set()
    images = []
    for i in _all("FROM"):
        words = i.args.split()
        ref = _expand(words[0], args)
        if len(words) == 3 and words[1].upper() == "AS":
            stages.add(words[2].lower())
        if ref.lower() not in stages:
            images.append(ref)
    return images


_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# An exact release: python:3.11.14-slim-bookworm, not python:3.11-slim.
_EXACT_TAG = re.compile(r":\d+\.\d+\.\d+(-[a-z0-9]+)*-(bookworm|trixie|bullseye|alpine\d+\.\d+)$")


def test_every_base_image_is_pinned_to_an_exact_release_or_digest() -> None:
    images = _base_images()
    assert images
    for ref in images:
        assert _DIGEST.search(ref) or _EXACT_TAG.search(ref), f"{ref} is not pinned"


def test_the_base_python_satisfies_requires_python() -> None:
    project = _project()
    minimum = re.fullmatch(r">=\s*(\d+)\.(\d+)", str(project["requires-python"]))
    assert minimum is not None
    for ref in _base_images():
        found = re.match(r"(?:[\w./-]+/)?python:(\d+)\.(\d+)\.", ref)
        assert found is not None, ref
        assert (int(found[1]), int(found[2])) >= (int(minimum[1]), int(minimum[2])), ref


def test_the_image_runs_as_a_numeric_non_root_user() -> None:
    users = _final("USER")
    assert users, "the final stage sets no USER: it would run as root"
    user = users[-1].args.split(":")[0]
    # Numeric, so Kubernetes' runAsNonRoot can check it without the passwd file.
    assert user.isdigit(), user
    assert int(user) != 0
    # Nothing after USER switches back.
    last = max(i.stage for i in DOCKERFILE)
    after = DOCKERFILE[DOCKERFILE.index(users[-1]) + 1 :]
    assert not [i for i in after if i.keyword == "USER" and i.stage == last]


def test_the_image_exposes_the_agent_forward_proxy_and_admin_ports() -> None:
    exposed = {int(p.split("/")[0]) for i in _final("EXPOSE") for p in i.args.split()}
    defaults = {Listen().port, ForwardListen().port, AdminListen().port}
    assert defaults == {8787, 8788, 8789}
    assert exposed == defaults


def test_entrypoint_is_reefgate_serve_with_the_config_and_all_interfaces() -> None:
    (entrypoint,) = _final("ENTRYPOINT")
    (cmd,) = _final("CMD")
    assert entrypoint.exec_form() == ["reefgate", "serve"]
    assert "reefgate" in _project()["scripts"]
    argv = [*entrypoint.exec_form()[1:], *cmd.exec_form()]
    args = build_parser().parse_args(argv)
    assert args.command == "serve"
    assert args.config == Path("/app/config")
    assert args.host == "0.0.0.0"
    assert args.port is None


def test_config_and_state_are_volumes_under_the_working_directory() -> None:
    (workdir,) = _final("WORKDIR")
    assert PurePosixPath(workdir.args) == APP
    volumes = {v for i in _final("VOLUME") for v in i.exec_form()}
    assert {"/app/config", "/app/var"} <= volumes
    # The shipped config is the default, copied where the CMD points.
    assert any(i.args.split() == ["config", "./config"] for i in _final("COPY"))
    # Docker discards what a build step writes under a volume after its VOLUME line.
    (volume,) = _final("VOLUME")
    steps = _final("COPY") + _final("RUN")
    assert all(DOCKERFILE.index(i) < DOCKERFILE.index(volume) for i in steps)
    # The state volume is the user's, or the gateway cannot write its state.
    runs = " ".join(i.args for i in _final("RUN"))
    assert re.search(r"chown \S+ /app/var", runs), runs


def test_the_shipped_config_keeps_its_state_on_the_state_volume() -> None:
    loaded = _load(REPO / "config", {})
    state = APP / "var"
    gw = loaded.gateway
    assert (APP / gw.audit.path).is_relative_to(state)
    assert (APP / gw.audit.key_file()).is_relative_to(state)
    assert (APP / gw.forward_proxy.ca_dir).is_relative_to(state)
    store = gw.review.store
    assert store.startswith("sqlite:///")
    assert (APP / store.removeprefix("sqlite:///")).is_relative_to(state)


def test_dependencies_are_installed_from_the_constraints_file() -> None:
    runs = [i.args for i in _all("RUN") if "pip install" in i.args]
    assert runs
    assert any(re.search(r"pip install\b.*-c constraints\.txt\b.*'\.\[fast\]'", r) for r in runs), (
        runs
    )
    copied = [i for i in _all("COPY") if "constraints.txt" in i.args.split()]
    assert copied, "constraints.txt is not copied into the build stage"
    assert DOCKERFILE.index(copied[0]) < DOCKERFILE.index(
        next(i for i in _all("RUN") if "pip install" in i.args)
    )


def _ignored(path: str, patterns: list[str]) -> bool:
    first = PurePosixPath(path).parts[0]
    return any(PurePosixPath(first).match(p) or first == p for p in patterns)


def test_every_copy_source_exists_and_is_in_the_build_context() -> None:
    ignore = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copies = [i for i in _all("COPY") if not i.args.startswith("--from=")]
    assert copies
    for copy in copies:
        words = [w for w in copy.args.split() if not w.startswith("--")]
        for source in words[:-1]:
            assert (REPO / source).exists(), f"COPY {source}: no such file in the repository"
            assert not _ignored(source, ignore), f"COPY {source}: excluded by .dockerignore"


def _requirement(text: str) -> tuple[str, tuple[int, ...] | None]:
    """(normalised name, lower bound) of a requirement such as `aiohttp>=3.14.3; marker`."""
    spec = text.split(";")[0].strip()
    match = re.fullmatch(r"([A-Za-z0-9._-]+)\s*(?:>=\s*([0-9.]+))?", spec)
    assert match is not None, f"unexpected requirement form: {text}"
    name = re.sub(r"[-_.]+", "-", match[1]).lower()
    return name, _version(match[2]) if match[2] else None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _project() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    assert isinstance(project, dict)
    return project


def test_constraints_pin_every_runtime_dependency_within_its_declared_bound() -> None:
    project = _project()
    wanted = [*project["dependencies"], *project["optional-dependencies"]["fast"]]
    pins: dict[str, tuple[int, ...]] = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and re.fullmatch(r"[0-9.]+", version.strip()), line
            pins[re.sub(r"[-_.]+", "-", name.strip()).lower()] = _version(version.strip())
    for requirement in wanted:
        name, minimum = _requirement(requirement)
        assert name in pins, f"{name} is not pinned in constraints.txt"
        if minimum is not None:
            assert pins[name] >= minimum, f"{name} pinned below {requirement}"


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def _serve(status: int) -> Iterator[int]:
    handler = type("Handler", (_Health,), {"status": status})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _healthcheck(port: int) -> int:
    (check,) = _final("HEALTHCHECK")
    options, _, command = check.args.partition("CMD ")
    assert "--timeout=" in options
    argv = json.loads(command)
    assert argv[:2] == ["python", "-c"]
    assert "http://127.0.0.1:8787/healthz" in argv[2]
    code = argv[2].replace(":8787/", f":{port}/")
    # A proxy set for the gateway's own traffic must not catch its health check.
    env = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=30, check=False
    )
    return done.returncode


def test_the_healthcheck_passes_on_200_and_fails_otherwise() -> None:
    with _serve(200) as port:
        assert _healthcheck(port) == 0
    with _serve(503) as port:
        assert _healthcheck(port) != 0


# -- deploy/ --


def _yaml_files() -> list[Path]:
    return sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])


def _documents(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert all(isinstance(d, dict) for d in docs), path
    return docs


def test_every_yaml_file_under_deploy_loads() -> None:
    files = _yaml_files()
    assert len(files) >= 5
    for path in files:
        assert _documents(path), f"{path} has no document"


def test_the_kustomization_lists_existing_manifests() -> None:
    (kustomization,) = _documents(KUBERNETES / "kustomization.yaml")
    resources = kustomization["resources"]
    assert resources
    for name in resources:
        assert (KUBERNETES / name).is_file(), name
    manifests = {p.name for p in KUBERNETES.glob("*.yaml")} - {"kustomization.yaml"}
    assert manifests == set(resources)


def _load(config_dir: Path, environ: Mapping[str, str]) -> LoadedConfig:
    loaded, issues = collect(config_dir, environ)
    assert loaded is not None, "\n".join(str(i) for i in issues)
    return loaded


def _manifests() -> list[dict[str, Any]]:
    return [d for p in sorted(KUBERNETES.glob("*.yaml")) for d in _documents(p)]


def _one(kind: str) -> dict[str, Any]:
    (found,) = [m for m in _manifests() if m.get("kind") == kind]
    return found


@dataclass(frozen=True)
class Pod:
    spec: dict[str, Any]

    def container(self, name: str) -> dict[str, Any]:
        found: list[dict[str, Any]] = [c for c in self.spec["containers"] if c["name"] == name]
        assert len(found) == 1, name
        return found[0]

    def volume(self, name: str) -> dict[str, Any]:
        found: list[dict[str, Any]] = [v for v in self.spec["volumes"] if v["name"] == name]
        assert len(found) == 1, name
        return found[0]

    def mounts(self, container: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """mountPath -> volumeMount."""
        return {m["mountPath"]: m for m in container.get("volumeMounts", [])}


def _pod() -> Pod:
    return Pod(_one("Deployment")["spec"]["template"]["spec"])


def _env(container: dict[str, Any]) -> dict[str, Any]:
    """name -> value, or the valueFrom mapping."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def _kubernetes_config(tmp_path: Path) -> LoadedConfig:
    """The gateway's config exactly as the pod mounts it, loaded with the container's env."""
    pod = _pod()
    gateway = pod.container("reefgate")
    mounts = pod.mounts(gateway)
    assert "/app/config" in mounts
    assert mounts["/app/config"].get("readOnly") is True
    source = pod.volume(mounts["/app/config"]["name"])["configMap"]
    (config_map,) = [
        m
        for m in _manifests()
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == source["name"]
    ]
    data = config_map["data"]
    items = source.get("items") or [{"key": k, "path": k} for k in data]
    assert {i["key"] for i in items} == set(data), "a ConfigMap key is not mounted"
    for item in items:
        target = tmp_path / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data[item["key"]])
    environ = {
        name: value if isinstance(value, str) else "value-from-a-secret"
        for name, value in _env(gateway).items()
    }
    return _load(tmp_path, environ)


def _check_sidecar_config(loaded: LoadedConfig) -> None:
    gw = loaded.gateway
    proxy = gw.forward_proxy
    assert proxy.enabled
    assert proxy.intercept == {"api.openai.com": "openai", "api.anthropic.com": "anthropic"}
    assert proxy.egress == "deny"
    assert gw.logging.format == "json"
    # Key custody: the gateway holds every provider key.
    for name in ("openai", "anthropic"):
        assert gw.upstreams[name].api_key_env, name
    assert [t for t in loaded.teams.values() if t.default]
    # Relative state paths land on the state volume under /app/var.
    assert (APP / proxy.ca_dir).is_relative_to(APP / "var")
    assert (APP / gw.audit.path).is_relative_to(APP / "var")


def test_the_kubernetes_config_map_is_a_valid_sidecar_config(tmp_path: Path) -> None:
    loaded = _kubernetes_config(tmp_path)
    _check_sidecar_config(loaded)
    # The agent shares the pod's network namespace: loopback is enough, and
    # keeps the proxy away from other pods.
    assert loaded.gateway.forward_proxy.listen.host == "127.0.0.1"


def test_the_pod_runs_the_agent_beside_the_gateway(tmp_path: Path) -> None:
    pod = _pod()
    assert sorted(c["name"] for c in pod.spec["containers"]) == ["agent", "reefgate"]
    gateway = pod.container("reefgate")
    loaded = _kubernetes_config(tmp_path)
    (cmd,) = _final("CMD")
    assert gateway.get("command") is None, "keep the image's ENTRYPOINT (reefgate serve)"
    assert gateway["args"] == cmd.exec_form()
    ports = {p["containerPort"] for p in gateway["ports"]}
    port = loaded.gateway.listen.port
    assert ports == {
        port,
        loaded.gateway.forward_proxy.listen.port,
        loaded.gateway.admin.listen.port,
    }
    assert gateway["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}
    assert gateway["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
    # The probes come from the kubelet, so the agents' port listens on every interface.
    assert "--host" in gateway["args"]
    assert gateway["args"][gateway["args"].index("--host") + 1] == "0.0.0.0"


def test_every_container_is_limited_non_root_and_read_only() -> None:
    pod = _pod()
    assert pod.spec["securityContext"]["runAsNonRoot"] is True
    assert pod.spec.get("automountServiceAccountToken") is False
    (user,) = _final("USER")
    containers = [*pod.spec.get("initContainers", []), *pod.spec["containers"]]
    for c in containers:
        security = c["securityContext"]
        assert security.get("runAsNonRoot", True) is True, c["name"]
        assert security.get("runAsUser", 1) != 0, c["name"]
        assert security["readOnlyRootFilesystem"] is True, c["name"]
        assert security["allowPrivilegeEscalation"] is False, c["name"]
        assert security["capabilities"]["drop"] == ["ALL"], c["name"]
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(c["resources"][kind]), (c["name"], kind)
        if c["image"].split(":")[0] == "reefgate":
            assert str(security["runAsUser"]) == user.args.split(":")[0], c["name"]
    # The gateway's state is on a writable volume.
    state = pod.mounts(pod.container("reefgate"))["/app/var"]
    assert not state.get("readOnly")


def _ca_script(container: dict[str, Any]) -> str:
    words = [*container.get("command", []), *container.get("args", [])]
    if isinstance(container.get("entrypoint"), list):
        words = [*container["entrypoint"], *container.get("command", [])]
    assert words[:2] == ["sh", "-ec"], words
    return " ".join(words[2:])


def _commands(script: str) -> list[list[str]]:
    return [shlex.split(c) for c in re.split(r";|\|\||&&", script) if c.strip()]


def _check_ca_script(script: str, ca_dir: PurePosixPath, public: PurePosixPath) -> None:
    commands = _commands(script)
    # Makes the CA where the gateway's config looks for it, unless it is there already.
    assert ["test", "-f", str(ca_dir / "ca.pem")] in commands, script
    inits = [c for c in commands if c[:3] == ["reefgate", "ca", "init"]]
    assert [c[3:] for c in inits] == [[str(ca_dir)]], script
    assert ["cp", str(ca_dir / "ca.pem"), str(public / "ca.pem")] in commands, script
    # Only the certificate is copied out, never the key.
    assert "ca-key.pem" not in script


def _reefgate_commands() -> list[list[str]]:
    scripts = [_ca_script(c) for c in _pod().spec["initContainers"]]
    scripts.append(_ca_script(_compose()["services"]["ca-init"]))
    return [c for s in scripts for c in _commands(s) if c[0] == "reefgate"]


def test_the_init_steps_run_a_command_reefgate_has() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if "ca" not in commands.choices:
        pytest.skip("`reefgate ca init` is not in this checkout yet")
    found = _reefgate_commands()
    assert found
    for argv in found:
        args = parser.parse_args(argv[1:])
        assert args.command == "ca"


def _under(path: str, mounts: Mapping[str, Any]) -> str | None:
    """The mountPath that holds `path`, if any."""
    for mount in mounts:
        if PurePosixPath(path).is_relative_to(PurePosixPath(mount)):
            return mount
    return None


def test_the_agent_uses_the_proxy_and_trusts_the_ca_but_cannot_read_its_key(
    tmp_path: Path,
) -> None:
    pod = _pod()
    loaded = _kubernetes_config(tmp_path)
    listen = loaded.gateway.forward_proxy.listen
    agent = pod.container("agent")
    env = _env(agent)
    assert env["HTTPS_PROXY"] == f"http://{listen.host}:{listen.port}"
    agent_mounts = pod.mounts(agent)
    ca_files = {env[name] for name in CA_ENV}
    assert len(ca_files) == 1, ca_files
    (ca_file,) = ca_files
    assert PurePosixPath(ca_file).name == "ca.pem"
    public_path = _under(ca_file, agent_mounts)
    assert public_path is not None, f"{ca_file} is on no volume the agent mounts"
    public = agent_mounts[public_path]
    assert public.get("readOnly") is True

    # An init container writes ca.pem to that volume from the gateway's CA directory.
    (init,) = pod.spec["initContainers"]
    init_mounts = pod.mounts(init)
    by_volume = {m["name"]: path for path, m in init_mounts.items()}
    ca_dir = APP / loaded.gateway.forward_proxy.ca_dir
    _check_ca_script(_ca_script(init), ca_dir, PurePosixPath(by_volume[public["name"]]))

    # The CA key's volume is the gateway's: the agent mounts none of the
    # gateway's volumes but the public certificate's.
    key_volume = init_mounts[_under(str(ca_dir), init_mounts) or ""]["name"]
    gateway_mounts = pod.mounts(pod.container("reefgate"))
    assert key_volume in {m["name"] for m in gateway_mounts.values()}
    agent_volumes = {m["name"] for m in agent_mounts.values()}
    assert key_volume not in agent_volumes
    assert not agent_volumes & {m["name"] for m in gateway_mounts.values()}


def test_only_the_gateway_holds_the_provider_keys(tmp_path: Path) -> None:
    pod = _pod()
    loaded = _kubernetes_config(tmp_path)
    gateway_env = _env(pod.container("reefgate"))
    secrets = set()
    for up in loaded.gateway.upstreams.values():
        assert up.api_key_env is not None
        source = gateway_env[up.api_key_env]
        assert isinstance(source, dict), f"{up.api_key_env} must come from a Secret"
        secrets.add(source["secretKeyRef"]["name"])
    agent = pod.container("agent")
    assert "envFrom" not in agent
    for name, value in _env(agent).items():
        assert isinstance(value, str), f"the agent's {name} comes from a Secret or ConfigMap"
        assert name not in gateway_env or value != gateway_env[name]
    assert secrets
    for volume in pod.spec["volumes"]:
        assert volume.get("secret", {}).get("secretName") not in secrets


# -- docker-compose.yml --


def _compose() -> dict[str, Any]:
    (compose,) = _documents(COMPOSE)
    return compose


def _service_mounts(service: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    """target -> (source, read-only) from short-syntax volumes."""
    out = {}
    for spec in service.get("volumes", []):
        source, target, *mode = spec.split(":")
        out[target] = (source, mode == ["ro"])
    return out


def _compose_config() -> LoadedConfig:
    services = _compose()["services"]
    gateway = services["reefgate"]
    source, read_only = _service_mounts(gateway)["/app/config"]
    assert read_only
    environ = {name: "value-from-the-host" for name in gateway["environment"]}
    return _load(COMPOSE.parent / source, environ)


def test_the_compose_file_builds_this_image_and_runs_its_default_arguments() -> None:
    compose = _compose()
    services = compose["services"]
    assert {"reefgate", "agent", "ca-init"} <= set(services)
    gateway = services["reefgate"]
    build = gateway["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == (
        REPO / "Dockerfile"
    )
    assert services["ca-init"]["image"] == gateway["image"]
    (cmd,) = _final("CMD")
    assert gateway["command"] == cmd.exec_form()
    assert "entrypoint" not in gateway
    # Provider keys come from the host's environment, never written in the file.
    for name, value in gateway["environment"].items():
        if name.endswith("_API_KEY"):
            assert re.fullmatch(r"\$\{" + name + r":\?[^}]*\}", value), name
    assert services["reefgate"]["depends_on"]["ca-init"] == {
        "condition": "service_completed_successfully"
    }
    assert services["agent"]["depends_on"]["reefgate"] == {"condition": "service_healthy"}


def test_the_compose_config_is_a_valid_sidecar_config() -> None:
    loaded = _compose_config()
    _check_sidecar_config(loaded)


def test_the_compose_agent_leaves_only_through_the_gateway() -> None:
    compose = _compose()
    services = compose["services"]
    networks = compose["networks"]
    loaded = _compose_config()
    agent, gateway = services["agent"], services["reefgate"]
    assert "network_mode" not in agent
    assert agent["networks"]
    for name in agent["networks"]:
        assert networks[name].get("internal") is True, f"network {name} has a route out"
        assert name in gateway["networks"]
    assert any(not (networks[n] or {}).get("internal") for n in gateway["networks"])
    listen = loaded.gateway.forward_proxy.listen
    # Another container reaches the proxy by the service's name, so it listens on all interfaces.
    assert listen.host == "0.0.0.0"
    assert agent["environment"]["HTTPS_PROXY"] == f"http://reefgate:{listen.port}"


def test_the_compose_agent_trusts_the_ca_but_cannot_read_its_key_or_the_provider_keys() -> None:
    services = _compose()["services"]
    loaded = _compose_config()
    agent, gateway, init = services["agent"], services["reefgate"], services["ca-init"]
    env = agent["environment"]
    (ca_file,) = {env[name] for name in CA_ENV}
    agent_mounts = _service_mounts(agent)
    public_path = _under(ca_file, agent_mounts)
    assert public_path is not None, f"{ca_file} is on no volume the agent mounts"
    public_volume, read_only = agent_mounts[public_path]
    assert read_only
    init_mounts = _service_mounts(init)
    by_volume = {source: target for target, (source, _) in init_mounts.items()}
    ca_dir = APP / loaded.gateway.forward_proxy.ca_dir
    _check_ca_script(_ca_script(init), ca_dir, PurePosixPath(by_volume[public_volume]))
    key_volume = init_mounts[_under(str(ca_dir), init_mounts) or ""][0]
    gateway_volumes = {source for source, _ in _service_mounts(gateway).values()}
    assert key_volume in gateway_volumes
    agent_volumes = {source for source, _ in agent_mounts.values()}
    assert not agent_volumes & gateway_volumes
    for name, value in env.items():
        assert "${" not in str(value), f"the agent's {name} comes from the host"
        if name in gateway["environment"]:
            assert value != gateway["environment"][name]


# -- the sidecar wiring, run locally: the image's command, the init step, the agent's env --


class _Upstream(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def do_GET(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"object": "list", "data": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


_AGENT = """
import json, os, sys, urllib.error, urllib.request
key = os.environ["OPENAI_API_KEY"]
req = urllib.request.Request(
    "https://api.openai.com/v1/models", headers={"Authorization": "Bearer " + key}
)
with urllib.request.urlopen(req, timeout=20) as r:
    print(json.dumps({"status": r.status, "body": json.load(r)}))
try:
    urllib.request.urlopen("https://example.com/", timeout=20)
    print(json.dumps({"egress": "open"}))
except urllib.error.URLError as exc:
    print(json.dumps({"egress": str(exc.reason)}))
"""


def test_an_agent_with_the_compose_environment_reaches_its_upstream_only_through_the_gateway(
    tmp_path: Path,
) -> None:
    """The compose example with /app under tmp_path, reefgate as 127.0.0.1, a local upstream."""
    services = _compose()["services"]
    gateway, agent, init = services["reefgate"], services["agent"], services["ca-init"]
    app = tmp_path / "app"
    public = tmp_path / "ca-public"
    (app / "var").mkdir(parents=True)
    public.mkdir()

    seen: list[dict[str, str]] = []
    handler = type("Upstream", (_Upstream,), {"seen": seen})
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()

    # The operator's config, with this machine's free ports and the local upstream.
    source, _ = _service_mounts(gateway)["/app/config"]
    config = app / "config"
    shutil.copytree(COMPOSE.parent / source, config)
    data = yaml.safe_load((config / "gateway.yaml").read_text())
    data["listen"]["port"] = 0
    # Port 0 and the port read from the gateway's output: a port found free
    # and released before the gateway binds it could be taken meanwhile.
    data["forward_proxy"]["listen"] = {"host": "127.0.0.1", "port": 0}
    proxy_port = 0
    data["admin"]["listen"]["port"] = 0
    data["upstreams"]["openai"]["base_url"] = f"http://127.0.0.1:{upstream.server_port}"
    (config / "gateway.yaml").write_text(yaml.safe_dump(data))

    def local(value: str) -> str:
        value = value.replace("/app/ca-public", str(public)).replace("/app", str(app))
        value = value.replace("/etc/reefgate", str(public))
        return value.replace("reefgate:8788", f"127.0.0.1:{proxy_port}")

    # This machine's environment without its own proxy, CA and key settings.
    base_env = {
        k: v
        for k, v in os.environ.items()
        if not re.search(r"proxy|_CA_|CERT|_API_KEY", k, re.IGNORECASE)
    }
    base_env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    # The init step, as the ca-init service runs it.
    done = subprocess.run(
        ["sh", "-ec", local(_ca_script(init))],
        env=base_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in public.iterdir()) == ["ca.pem"]

    custody = "sk-proj-" + "Tq7w" * 12
    (entrypoint,) = _final("ENTRYPOINT")
    argv = [*entrypoint.exec_form(), *(local(a) for a in gateway["command"])]
    serve = subprocess.Popen(
        argv,
        cwd=app,
        env={
            **base_env,
            "OPENAI_API_KEY": custody,
            "ANTHROPIC_API_KEY": "sk-ant-x",
            "PYTHONUNBUFFERED": "1",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()
        assert "listening on http://" in line, line
        forward = "reefgate forward proxy listening on "
        while not line.startswith(forward):
            line = serve.stdout.readline()
            assert line, "the gateway stopped before its forward proxy listened"
        proxy_port = int(line.removeprefix(forward).split()[0].rsplit(":", 1)[1])
        agent_env = {**base_env, **{k: local(str(v)) for k, v in agent["environment"].items()}}
        ran = subprocess.run(
            [sys.executable, "-c", _AGENT],
            env=agent_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        serve.send_signal(signal.SIGTERM)
        _, stderr = serve.communicate(timeout=15)
        upstream.shutdown()
        upstream.server_close()
    assert ran.returncode == 0, ran.stderr + stderr
    first, second = (json.loads(x) for x in ran.stdout.splitlines())
    assert first == {"status": 200, "body": {"object": "list", "data": []}}
    # Key custody: the upstream saw the gateway's key, not the agent's placeholder.
    (headers,) = seen
    assert headers["authorization"] == f"Bearer {custody}"
    assert "403" in second["egress"], second
    assert serve.returncode == 0, stderr


def test_the_kill_waits_for_the_gateways_drain(tmp_path: Path) -> None:
    drain = _kubernetes_config(tmp_path).gateway.limits.drain_timeout_s
    assert _pod().spec["terminationGracePeriodSeconds"] > drain
    grace = _compose()["services"]["reefgate"]["stop_grace_period"]
    assert (
        grace.endswith("s") and float(grace[:-1]) > _compose_config().gateway.limits.drain_timeout_s
    )
