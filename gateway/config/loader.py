"""Load and validate a config directory: `gateway.yaml` plus `teams/*.yaml`.

Validation collects every error before failing, each with its file and key
path, so an operator fixes a config in one pass.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from gateway.config.models import GatewayConfig, Team
from gateway.errors import ConfigError

# A fingerprint key given in the environment: 32 characters or more.
FINGERPRINT_KEY_CHARS = 32


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    file: str
    key_path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.key_path}" if self.key_path else self.file
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    gateway: GatewayConfig
    teams: Mapping[str, Team]
    source: str = "<embedded default>"
    # Environment values resolved at load time, so a request never reads os.environ.
    env: Mapping[str, str] = field(default_factory=dict)


def embedded_default() -> LoadedConfig:
    return LoadedConfig(gateway=GatewayConfig(), teams={"default": Team(default=True)})


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _read_yaml(path: Path, display: str, issues: list[ConfigIssue]) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        issues.append(ConfigIssue(display, "", f"cannot read: {exc}"))
        return None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        duplicates = _duplicate_keys(node, "") if node is not None else []
        if duplicates:
            for key_path, line in duplicates:
                issues.append(
                    ConfigIssue(display, key_path, f"duplicate key (line {line}); keep only one")
                )
            return None
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        issues.append(ConfigIssue(display, "", f"invalid YAML: {where}{problem}"))
        return None
    finally:
        loader.dispose()
    if data is None:
        return {}
    if not isinstance(data, dict):
        issues.append(ConfigIssue(display, "", "must be a mapping at the top level"))
        return None
    return data


def _duplicate_keys(node: yaml.Node, path: str) -> list[tuple[str, int]]:
    """(key path, line) of every key repeated within one mapping.

    PyYAML keeps the last of two equal keys, so a second `openai:` upstream
    would silently replace the first. Keys brought in by a `<<` merge may be
    overridden; that is what merging is for.
    """
    found: list[tuple[str, int]] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[tuple[str, str]] = set()
        for key, value in node.value:
            if key.tag == "tag:yaml.org,2002:merge":
                continue
            name = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
            child = f"{path}.{name}" if path else name
            if isinstance(key, yaml.ScalarNode):
                ident = (key.tag, key.value)
                if ident in seen:
                    found.append((child, key.start_mark.line + 1))
                seen.add(ident)
            found.extend(_duplicate_keys(value, child))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found.extend(_duplicate_keys(item, f"{path}[{i}]"))
    return found


def _validation_issues(display: str, exc: ValidationError) -> list[ConfigIssue]:
    out = []
    for err in exc.errors(include_url=False):
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        out.append(ConfigIssue(display, _key_path(tuple(err["loc"])), msg))
    return out


def collect(
    config_dir: Path, environ: Mapping[str, str] | None = None
) -> tuple[LoadedConfig | None, list[ConfigIssue]]:
    """Load `config_dir`; return the config (or None) and every issue found."""
    env = os.environ if environ is None else environ
    issues: list[ConfigIssue] = []
    base = config_dir
    if not base.is_dir():
        return None, [ConfigIssue(str(base), "", "config directory does not exist")]

    gw_path = base / "gateway.yaml"
    gw_display = str(gw_path)
    gateway: GatewayConfig | None = None
    if gw_path.exists():
        raw = _read_yaml(gw_path, gw_display, issues)
        if raw is not None:
            try:
                gateway = GatewayConfig.model_validate(raw)
            except ValidationError as exc:
                issues.extend(_validation_issues(gw_display, exc))
    else:
        gateway = GatewayConfig()

    teams: dict[str, Team] = {}
    team_dir = base / "teams"
    team_files = sorted(team_dir.glob("*.yaml")) + sorted(team_dir.glob("*.yml"))
    for path in team_files:
        display = str(path)
        raw = _read_yaml(path, display, issues)
        if raw is None:
            continue
        try:
            teams[path.stem] = Team.model_validate(raw)
        except ValidationError as exc:
            issues.extend(_validation_issues(display, exc))

    resolved: dict[str, str] = {}
    if gateway is not None:
        issues.extend(_cross_check(gateway, gw_display, teams, team_dir, env, resolved))
    if issues or gateway is None:
        return None, issues
    return LoadedConfig(gateway=gateway, teams=teams, source=str(base), env=resolved), []


def _cross_check(
    gateway: GatewayConfig,
    gw_display: str,
    teams: Mapping[str, Team],
    team_dir: Path,
    env: Mapping[str, str],
    resolved: dict[str, str],
) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []

    def need_env(name: str, display: str, key_path: str) -> None:
        value = env.get(name, "")
        if not value:
            issues.append(ConfigIssue(display, key_path, f"environment variable {name} is not set"))
        else:
            resolved[name] = value

    for up_name, upstream in gateway.upstreams.items():
        if upstream.api_key_env:
            need_env(upstream.api_key_env, gw_display, f"upstreams.{up_name}.api_key_env")

    key_env = gateway.audit.fingerprint_key_env
    if key_env:
        need_env(key_env, gw_display, "audit.fingerprint_key_env")
        if 0 < len(env.get(key_env, "")) < FINGERPRINT_KEY_CHARS:
            issues.append(
                ConfigIssue(
                    gw_display,
                    "audit.fingerprint_key_env",
                    f"environment variable {key_env} must hold at least "
                    f"{FINGERPRINT_KEY_CHARS} characters",
                )
            )
    if gateway.admin.token_env:
        need_env(gateway.admin.token_env, gw_display, "admin.token_env")
    if gateway.guard.classifier.api_key_env:
        need_env(gateway.guard.classifier.api_key_env, gw_display, "guard.classifier.api_key_env")
    defaults = [name for name, team in teams.items() if team.default]
    if len(defaults) > 1:
        issues.append(
            ConfigIssue(
                str(team_dir), "default", f"more than one default team: {', '.join(defaults)}"
            )
        )
    key_owner: dict[str, str] = {}
    for name, team in teams.items():
        display = str(team_dir / f"{name}.yaml")
        for i, var in enumerate(team.match.keys_env):
            need_env(var, display, f"match.keys_env[{i}]")
            value = env.get(var, "")
            if value:
                other = key_owner.setdefault(value, name)
                if other != name:
                    issues.append(
                        ConfigIssue(
                            display, f"match.keys_env[{i}]", f"same key value as team {other}"
                        )
                    )
        for i, var in enumerate(team.reviewers.tokens_env):
            need_env(var, display, f"reviewers.tokens_env[{i}]")
        team_classifier = team.guard.classifier
        if team_classifier is not None and team_classifier.api_key_env:
            need_env(team_classifier.api_key_env, display, "guard.classifier.api_key_env")
        for ref in team.upstreams or []:
            if ref not in gateway.upstreams:
                issues.append(ConfigIssue(display, "upstreams", f"unknown upstream {ref!r}"))
        for up_name, cred in team.credentials.items():
            if up_name not in gateway.upstreams:
                issues.append(
                    ConfigIssue(display, f"credentials.{up_name}", f"unknown upstream {up_name!r}")
                )
            need_env(cred.api_key_env, display, f"credentials.{up_name}.api_key_env")
    return issues


def load(config_dir: Path | None, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Load a config directory or, with None, the embedded default."""
    if config_dir is None:
        return embedded_default()
    loaded, issues = collect(config_dir, environ)
    if loaded is None:
        raise ConfigError(issues)
    return loaded
