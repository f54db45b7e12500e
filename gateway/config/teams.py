"""Which team a request belongs to.

Precedence, most specific first: a gateway-issued key, then a header, then the
source address, then the default team. A key match also means the credential
is the gateway's own and must never reach the upstream.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.config.loader import LoadedConfig
from gateway.config.models import Team

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class TeamMatch:
    name: str
    team: Team
    by_key: bool
    # The env var naming the gateway-issued key the agent presented: which
    # agent of the team this is, without the key itself.
    key_env: str | None = None

    @property
    def source(self) -> str:
        """Who sent it, as reviews and approvals name the sender: the team, and which agent."""
        source = f"team:{self.name}"
        return f"{source}/key:{self.key_env}" if self.key_env else source


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The API key an SDK sent, in any of the headers providers use."""
    auth = headers.get("Authorization")
    if auth is not None:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value:
            return value.strip()
    return headers.get("x-api-key") or headers.get("api-key")


class TeamResolver:
    def __init__(self, config: LoadedConfig) -> None:
        self._by_key: dict[str, tuple[str, str]] = {}
        self._by_header: list[tuple[str, dict[str, str]]] = []
        self._by_cidr: list[tuple[str, list[IPNetwork]]] = []
        self._teams = dict(config.teams)
        self._default: str | None = None
        for name, team in config.teams.items():
            for var in team.match.keys_env:
                value = config.env.get(var)
                if value:
                    self._by_key[value] = (name, var)
            if team.match.headers:
                self._by_header.append((name, dict(team.match.headers)))
            if team.match.source_cidrs:
                nets = [ipaddress.ip_network(c, strict=False) for c in team.match.source_cidrs]
                self._by_cidr.append((name, nets))
            if team.default:
                self._default = name

    def resolve(self, headers: Mapping[str, str], remote: str | None) -> TeamMatch | None:
        if self._by_key:
            key = presented_key(headers)
            if key is not None:
                found = self._by_key.get(key)
                if found is not None:
                    name, var = found
                    return TeamMatch(name, self._teams[name], by_key=True, key_env=var)
        for name, wanted in self._by_header:
            if all(headers.get(h) == v for h, v in wanted.items()):
                return TeamMatch(name, self._teams[name], by_key=False)
        if self._by_cidr and remote:
            try:
                addr = ipaddress.ip_address(remote)
            except ValueError:
                addr = None
            if addr is not None:
                for name, nets in self._by_cidr:
                    if any(addr in net for net in nets):
                        return TeamMatch(name, self._teams[name], by_key=False)
        if self._default is not None:
            return TeamMatch(self._default, self._teams[self._default], by_key=False)
        return None
