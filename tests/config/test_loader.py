from __future__ import annotations

from pathlib import Path

import pytest
from multidict import CIMultiDict

from gateway.config.loader import collect, embedded_default, load
from gateway.config.models import Match, Team
from gateway.config.teams import TeamResolver, presented_key
from gateway.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_shipped_config_is_valid() -> None:
    loaded, issues = collect(REPO / "config", environ={})
    assert issues == []
    assert loaded is not None
    gw = loaded.gateway
    assert gw.listen.port == 8787
    assert gw.upstreams["openai"].base_url == "https://api.openai.com"
    assert gw.upstreams["anthropic"].base_url == "https://api.anthropic.com"
    assert gw.upstreams["anthropic"].resolved_flavor("anthropic") == "anthropic"
    assert loaded.teams["default"].default is True


def test_embedded_default_matches_shipped() -> None:
    shipped = load(REPO / "config", environ={})
    assert embedded_default().gateway == shipped.gateway


@pytest.mark.parametrize(
    ("base_url", "said"),
    [
        pytest.param("https://user:secret@api.example", "must not hold credentials", id="userinfo"),
        pytest.param("http://:8080", "must name a host", id="no-host"),
        pytest.param("http://h:99999", "is not a valid URL", id="bad-port"),
        pytest.param("http://[::1/v1", "is not a valid URL", id="bad-ipv6"),
    ],
)
def test_an_upstream_url_the_proxy_cannot_use_is_a_config_error(
    tmp_path: Path, base_url: str, said: str
) -> None:
    _write(tmp_path, {"gateway.yaml": f"upstreams:\n  openai: {{base_url: '{base_url}'}}\n"})
    loaded, issues = collect(tmp_path, environ={})
    assert loaded is None
    [issue] = [str(i) for i in issues]
    assert "upstreams.openai.base_url" in issue
    assert said in issue
    assert "secret" not in issue


def test_every_error_reported_with_file_and_key_path(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "gateway.yaml": (
                "listen:\n  port: 99999\n"
                "upstreams:\n  openai:\n    base_url: ftp://x\n    colour: red\n"
            ),
            "teams/a.yaml": "default: true\nmatch:\n  keys_env: [A_KEY]\n",
            "teams/b.yaml": "default: true\nmatch: {source_cidrs: [not-a-cidr]}\n",
            "teams/c.yaml": "match:\n  headers: {x: [1, 2]}\n",
            "teams/d.yaml": "default: [\n",
        },
    )
    loaded, issues = collect(tmp_path, environ={})
    assert loaded is None
    text = "\n".join(str(i) for i in issues)
    assert "gateway.yaml: listen.port:" in text
    assert "gateway.yaml: upstreams.openai.base_url:" in text
    assert "gateway.yaml: upstreams.openai.colour: unknown key" in text
    assert "b.yaml: match.source_cidrs" in text
    assert "c.yaml: match.headers.x" in text
    assert "d.yaml: invalid YAML: line" in text
    # a.yaml validates on its own; the env check needs a valid gateway.yaml.


def test_cross_checks(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "gateway.yaml": (
                "upstreams:\n"
                "  openai: {base_url: 'https://api.openai.com', api_key_env: OPENAI_REAL}\n"
            ),
            "teams/a.yaml": (
                "default: true\nmatch:\n  keys_env: [A_KEY]\nupstreams: [openai, nope]\n"
            ),
            "teams/b.yaml": "default: true\nmatch:\n  keys_env: [B_KEY]\n",
        },
    )
    _, issues = collect(tmp_path, environ={"A_KEY": "same", "B_KEY": "same"})
    text = "\n".join(str(i) for i in issues)
    assert "upstreams.openai.api_key_env: environment variable OPENAI_REAL is not set" in text
    assert "more than one default team" in text
    assert "unknown upstream 'nope'" in text
    assert "same key value as team a" in text


def test_reserved_upstream_name(tmp_path: Path) -> None:
    _write(tmp_path, {"gateway.yaml": "upstreams:\n  healthz: {base_url: 'http://x'}\n"})
    _, issues = collect(tmp_path, environ={})
    assert any("reserved" in i.message for i in issues)


def test_load_raises_with_issues(tmp_path: Path) -> None:
    _write(tmp_path, {"gateway.yaml": "nonsense: 1\n"})
    with pytest.raises(ConfigError) as info:
        load(tmp_path, environ={})
    assert "nonsense: unknown key" in str(info.value)


def test_team_needs_a_way_in(tmp_path: Path) -> None:
    _write(tmp_path, {"teams/lost.yaml": "upstreams: [openai]\n"})
    _, issues = collect(tmp_path, environ={})
    assert any("a team needs default: true" in i.message for i in issues)


def test_resolver_precedence() -> None:
    from gateway.config.loader import LoadedConfig
    from gateway.config.models import GatewayConfig

    config = LoadedConfig(
        gateway=GatewayConfig(),
        teams={
            "keyed": Team(match=Match(keys_env=["K"])),
            "header": Team(match=Match(headers={"X-Team": "h"})),
            "net": Team(match=Match(source_cidrs=["10.0.0.0/8"])),
            "fallback": Team(default=True),
        },
        env={"K": "gw-key"},
    )
    r = TeamResolver(config)

    def name(headers: dict[str, str], remote: str | None = None) -> str | None:
        m = r.resolve(CIMultiDict(headers), remote)
        return None if m is None else m.name

    assert name({"Authorization": "Bearer gw-key", "X-Team": "h"}) == "keyed"
    assert r.resolve(CIMultiDict({"x-api-key": "gw-key"}), None).by_key  # type: ignore[union-attr]
    assert name({"X-Team": "h"}, "10.1.2.3") == "header"
    assert name({}, "10.1.2.3") == "net"
    assert name({}, "192.168.1.1") == "fallback"
    assert name({"Authorization": "Bearer wrong"}) == "fallback"


def test_presented_key() -> None:
    assert presented_key({"Authorization": "Bearer abc"}) == "abc"
    assert presented_key({"Authorization": "Basic abc"}) is None
    assert presented_key({"x-api-key": "k"}) == "k"


def test_a_duplicate_key_is_refused_with_file_and_key_path(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "gateway.yaml": (
                "upstreams:\n"
                "  openai:\n    base_url: https://api.openai.com\n"
                "  openai:\n    base_url: http://evil.example\n"
                "limits:\n  max_body_bytes: 2048\n  max_body_bytes: 4096\n"
            ),
            "teams/a.yaml": "default: true\nrules:\n  outbound: x\n  outbound: y\n",
            "teams/b.yaml": "match:\n  headers: {x-team: b, x-team: c}\n",
        },
    )
    loaded, issues = collect(tmp_path, environ={})
    assert loaded is None
    text = "\n".join(str(i) for i in issues)
    assert f"{tmp_path / 'gateway.yaml'}: upstreams.openai: duplicate key (line 4)" in text
    assert "gateway.yaml: limits.max_body_bytes: duplicate key (line 8)" in text
    assert "a.yaml: rules.outbound: duplicate key" in text
    assert "b.yaml: match.headers.x-team: duplicate key" in text


def test_merge_keys_may_override_what_they_merge(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "gateway.yaml": (
                "upstreams:\n"
                "  openai: &up\n    base_url: https://api.openai.com\n    read_timeout_s: 60\n"
                "  other:\n    <<: *up\n    base_url: https://other.example\n"
            ),
        },
    )
    loaded, issues = collect(tmp_path, environ={})
    assert issues == []
    assert loaded is not None
    assert loaded.gateway.upstreams["other"].base_url == "https://other.example"
    assert loaded.gateway.upstreams["other"].read_timeout_s == 60
