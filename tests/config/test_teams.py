"""TeamResolver: tables built at config load, the same answers per request."""

from __future__ import annotations

from multidict import CIMultiDict

from gateway.config import teams as teams_module
from gateway.config.loader import LoadedConfig
from gateway.config.models import GatewayConfig, Match, Team
from gateway.config.teams import TeamResolver


def _config() -> LoadedConfig:
    return LoadedConfig(
        gateway=GatewayConfig(),
        teams={
            "keyed": Team(match=Match(keys_env=["K1", "K2", "UNSET"])),
            "header": Team(match=Match(headers={"X-Team": "h", "X-Env": "prod"})),
            "net": Team(match=Match(source_cidrs=["10.0.0.0/8", "2001:db8::/32"])),
            "fallback": Team(default=True),
        },
        env={"K1": "gw-key-1", "K2": "gw-key-2"},
    )


def test_each_request_gets_the_match_built_at_load() -> None:
    r = TeamResolver(_config())
    first = r.resolve(CIMultiDict({"Authorization": "Bearer gw-key-1"}), None)
    again = r.resolve(CIMultiDict({"x-api-key": "gw-key-1"}), "10.0.0.1")
    assert first is again
    assert first is not None and first.by_key and first.key_env == "K1"
    assert first.source == "team:keyed/key:K1"
    other = r.resolve(CIMultiDict({"api-key": "gw-key-2"}), None)
    assert other is not None and other.key_env == "K2" and other.name == "keyed"
    assert r.resolve(CIMultiDict(), None) is r.resolve(CIMultiDict(), "192.0.2.1")


def test_every_header_of_a_team_must_match() -> None:
    r = TeamResolver(_config())

    def name(headers: dict[str, str], remote: str | None = None) -> str | None:
        match = r.resolve(CIMultiDict(headers), remote)
        return None if match is None else match.name

    assert name({"x-team": "h", "x-env": "prod"}) == "header"
    assert name({"X-Team": "h"}) == "fallback"
    assert name({"X-Team": "h", "X-Env": "dev"}, "10.9.9.9") == "net"


def test_networks_with_remembered_addresses() -> None:
    r = TeamResolver(_config())
    for _ in range(2):
        for remote, expected in [
            ("10.1.2.3", "net"),
            ("2001:db8::1", "net"),
            ("11.0.0.1", "fallback"),
            ("not an address", "fallback"),
            ("", "fallback"),
        ]:
            match = r.resolve(CIMultiDict(), remote)
            assert match is not None and match.name == expected, remote
            assert not match.by_key


def test_remembered_addresses_are_bounded() -> None:
    r = TeamResolver(_config())
    for i in range(teams_module._REMOTE_CACHE + 10):
        r.resolve(CIMultiDict(), f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}")
    assert len(r._by_remote) <= teams_module._REMOTE_CACHE
    match = r.resolve(CIMultiDict(), "10.0.0.1")
    assert match is not None and match.name == "net"


def test_no_default_no_match() -> None:
    config = LoadedConfig(
        gateway=GatewayConfig(), teams={"keyed": Team(match=Match(keys_env=["K"]))}, env={}
    )
    assert TeamResolver(config).resolve(CIMultiDict({"Authorization": "Bearer x"}), None) is None


def test_of_keeps_one_resolver_per_config() -> None:
    config = _config()
    resolver = TeamResolver.of(config)
    assert TeamResolver.of(config) is resolver
    # A reload makes a new config object, and with it a new resolver.
    reloaded = _config()
    assert TeamResolver.of(reloaded) is not resolver
    assert TeamResolver.of(reloaded) is TeamResolver.of(reloaded)
