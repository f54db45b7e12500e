"""Reloading the configuration while serving: what may change, and noticing that it did.

A reload (SIGHUP, or a change of ``gateway.yaml`` or ``teams/*.yaml``) loads
and validates the whole directory again. Valid, it is applied
(``gateway.app.reload``): new requests get it, requests in flight finish on
the config they started with. Invalid, every issue is logged with its file
and key path and the running config keeps serving.

Some settings belong to what the process opened once at start: its
listeners, the audit log, the review stores, the upstream connection pool,
the CA, the logging setup and the Reef endpoint. A reload keeps those at
their running values (``pin_restart_keys``) and logs each changed one as
needing a restart; the rest of the new config is applied.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gateway.config.loader import ConfigIssue, LoadedConfig, collect
from gateway.config.models import GatewayConfig, Team

__all__ = ["RESTART_KEYS", "ConfigFiles", "load_for_reload", "pin_restart_keys"]

log = logging.getLogger("reefgate.config")

# gateway.yaml keys read only at start; a team file's `review.store` is one too.
RESTART_KEYS: tuple[str, ...] = (
    "listen",
    "audit",
    "review.store",
    "admin.listen",
    "limits.upstream_connections",
    "forward_proxy.enabled",
    "forward_proxy.listen",
    "forward_proxy.ca_dir",
    "forward_proxy.leaf_validity_hours",
    "forward_proxy.leaf_cache_size",
    "logging",
    "peer.reef",
)

_RESTART = "needs a restart to take effect; the running value is kept until then"


def load_for_reload(config_dir: Path) -> LoadedConfig | None:
    """The directory's config, or None after logging every issue (file and key path)."""
    loaded, issues = collect(config_dir)
    if loaded is None:
        for issue in issues:
            log.error("config reload: %s", issue)
        log.error(
            "config reload: %d error(s) in %s; still serving the running config",
            len(issues),
            config_dir,
        )
    return loaded


def pin_restart_keys(
    running: LoadedConfig, new: LoadedConfig, store_urls: Collection[str]
) -> tuple[LoadedConfig, list[ConfigIssue]]:
    """``new`` with the start-only settings of ``running``, and one issue per changed one.

    ``store_urls`` are the review stores open now: a team whose store would be
    another keeps its running one (a new team: gateway.yaml's running store).
    Raises ``ValueError`` if the result is not a valid config (a kept setting
    that names what the new config removed).
    """
    source = Path(new.source)
    gw_display = str(source / "gateway.yaml")
    issues: list[ConfigIssue] = []
    gateway: BaseModel = new.gateway
    for key in RESTART_KEYS:
        parts = key.split(".")
        kept = _get(running.gateway, parts)
        if _get(gateway, parts) != kept:
            issues.append(ConfigIssue(gw_display, key, _RESTART))
            gateway = _set(gateway, parts, kept)
    base = running.gateway.review
    teams: dict[str, Team] = {}
    for name, team in new.teams.items():
        if team.review.over(base).store not in store_urls:
            issues.append(ConfigIssue(_team_file(source, name), "review.store", _RESTART))
            old = running.teams.get(name)
            store = old.review.store if old is not None else None
            team = team.model_copy(
                update={"review": team.review.model_copy(update={"store": store})}
            )
        teams[name] = team
    try:
        # Validated again: the model validators see the kept values beside the new ones.
        checked = GatewayConfig.model_validate(gateway.model_dump())
        checked_teams = {name: Team.model_validate(t.model_dump()) for name, t in teams.items()}
    except ValidationError as exc:
        raise ValueError(str(exc)) from exc
    pinned = LoadedConfig(gateway=checked, teams=checked_teams, source=new.source, env=new.env)
    return pinned, issues


def _get(model: Any, parts: list[str]) -> Any:
    for part in parts:
        model = getattr(model, part)
    return model


def _set(model: BaseModel, parts: list[str], value: object) -> BaseModel:
    head, rest = parts[0], parts[1:]
    if rest:
        value = _set(getattr(model, head), rest, value)
    return model.model_copy(update={head: value})


def _team_file(source: Path, name: str) -> str:
    for suffix in (".yaml", ".yml"):
        path = source / "teams" / f"{name}{suffix}"
        if path.exists():
            return str(path)
    return str(source / "teams" / f"{name}.yaml")


_Stamp = tuple[str, int, int, int]


class ConfigFiles:
    """Notices that gateway.yaml or a team file changed, appeared or went away.

    Polled (about once a second while serving): a stat of each file, no
    dependency and no inotify. A file is taken as changed when its
    modification time, size or inode differ, so an editor's save by rename
    counts too.
    """

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = config_dir
        self._last = self._stamps()

    def _files(self) -> Iterable[Path]:
        yield self.config_dir / "gateway.yaml"
        teams = self.config_dir / "teams"
        yield from sorted(teams.glob("*.yaml"))
        yield from sorted(teams.glob("*.yml"))

    def _stamps(self) -> frozenset[_Stamp]:
        stamps = set()
        for path in self._files():
            try:
                st = os.stat(path)
            except OSError:
                continue
            stamps.add((str(path), st.st_mtime_ns, st.st_size, st.st_ino))
        return frozenset(stamps)

    def changed(self) -> bool:
        """Whether the files differ from the last call (or from construction)."""
        now = self._stamps()
        if now == self._last:
            return False
        self._last = now
        return True
