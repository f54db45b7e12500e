"""Which team a request belongs to.

Precedence, most specific first: a gateway-issued key, then a header, then the
source address, then the default team. A key match also means the credential
is the gateway's own and must never reach the upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from typing import Final, Protocol

from gateway.config.loader import LoadedConfig
from gateway.config.models import Team

IPNetwork = IPv4Network | IPv6Network


class Peer(Protocol):
    """What `TeamResolver.resolve_request` reads of a request (aiohttp's has both)."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def remote(self) -> str | None: ...


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


# Past this many distinct source addresses the remembered CIDR matches are
# forgotten and learnt again; agents are few, addresses a client picks are not.
_REMOTE_CACHE: Final = 4096


class TeamResolver:
    """Matches a request to its team with tables built once, at config load.

    Every TeamMatch a request can get exists before the first request: a key,
    a header set, a network or the default each map to one shared object.
    """

    def __init__(self, config: LoadedConfig) -> None:
        self._by_key: dict[str, TeamMatch] = {}
        by_header: list[tuple[TeamMatch, tuple[tuple[str, str], ...]]] = []
        by_cidr: list[tuple[TeamMatch, tuple[IPNetwork, ...]]] = []
        self._default: TeamMatch | None = None
        for name, team in config.teams.items():
            for var in team.match.keys_env:
                value = config.env.get(var)
                if value:
                    self._by_key[value] = TeamMatch(name, team, by_key=True, key_env=var)
            plain = TeamMatch(name, team, by_key=False)
            if team.match.headers:
                by_header.append((plain, tuple(team.match.headers.items())))
            if team.match.source_cidrs:
                nets = tuple(ip_network(c, strict=False) for c in team.match.source_cidrs)
                by_cidr.append((plain, nets))
            if team.default:
                self._default = plain
        self._by_header = tuple(by_header)
        self._by_cidr = tuple(by_cidr)
        self._by_remote: dict[str, TeamMatch | None] = {}

    def resolve_request(self, request: Peer) -> TeamMatch | None:
        """`resolve` for a request; its address is read only when a team matches by CIDR."""
        # aiohttp works the peer's address out again on each read of `remote`.
        return self.resolve(request.headers, request.remote if self._by_cidr else None)

    @classmethod
    def of(cls, config: LoadedConfig) -> TeamResolver:
        """The resolver of `config`, built on its first use and kept with it."""
        global _last
        last = _last
        if last is not None and last[0] is config:
            return last[1]
        resolver = cls(config)
        _last = (config, resolver)
        return resolver

    def resolve(self, headers: Mapping[str, str], remote: str | None) -> TeamMatch | None:
        if self._by_key:
            key = presented_key(headers)
            if key is not None:
                found = self._by_key.get(key)
                if found is not None:
                    return found
        for match, wanted in self._by_header:
            if all(headers.get(h) == v for h, v in wanted):
                return match
        if self._by_cidr and remote:
            by_network = self._by_network(remote)
            if by_network is not None:
                return by_network
        return self._default

    def _by_network(self, remote: str) -> TeamMatch | None:
        cache = self._by_remote
        if remote in cache:
            return cache[remote]
        found: TeamMatch | None = None
        try:
            addr = ip_address(remote)
        except ValueError:
            pass
        else:
            for match, nets in self._by_cidr:
                if any(addr in net for net in nets):
                    found = match
                    break
        if len(cache) >= _REMOTE_CACHE:
            cache.clear()
        cache[remote] = found
        return found


# The resolver TeamResolver.of built last, with its config: a config is
# replaced whole on reload, so the next call sees a new object and rebuilds.
_last: tuple[LoadedConfig, TeamResolver] | None = None
