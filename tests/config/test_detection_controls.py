"""Team YAML for detection controls: validated at load, each error with its file and key path."""

from __future__ import annotations

from pathlib import Path

from gateway.config.loader import collect


def _issues(tmp_path: Path, team_yaml: str) -> str:
    (tmp_path / "teams").mkdir()
    (tmp_path / "gateway.yaml").write_text("listen: {port: 8787}\n")
    (tmp_path / "teams" / "t.yaml").write_text(team_yaml)
    _, issues = collect(tmp_path, environ={})
    return "\n".join(str(i) for i in issues)


def test_valid_controls_load(tmp_path: Path) -> None:
    text = _issues(
        tmp_path,
        "default: true\n"
        "allow:\n"
        "  fingerprints: [0123456789abcdef]\n"
        "  patterns: ['AKIA[A-Z0-9]{9}EXAMPLE']\n"
        "  credential_paths:\n"
        "    - {path: 'tools[*].headers', kinds: [openai_api_key]}\n"
        "    - {path: 'mcp_servers[*].authorization_token', kinds: [github_token]}\n"
        "detectors:\n"
        "  custom:\n"
        "    - {kind: project_falcon, pattern: '(?i)project falcon', decision: deny}\n"
        "    - {kind: customer_id, pattern: 'CUST-[0-9]{8}', decision: review}\n"
        "outbound: {on_secret: redact}\n",
    )
    assert text == ""


def test_a_pattern_that_needs_backtracking_is_refused(tmp_path: Path) -> None:
    text = _issues(
        tmp_path,
        "default: true\n"
        "detectors:\n"
        "  custom:\n"
        "    - {kind: ok_rule, pattern: 'fine[0-9]+'}\n"
        "    - {kind: twice, pattern: '(\\w+)\\s+\\1'}\n"
        "    - {kind: behind, pattern: '(?<=id=)[0-9]+'}\n"
        "allow:\n"
        "  patterns: ['(?=AKIA)AKIA.*']\n",
    )
    assert "t.yaml: detectors.custom[1].pattern:" in text
    assert "t.yaml: detectors.custom[2].pattern:" in text
    assert "t.yaml: allow.patterns:" in text
    assert "linear time" in text
    assert "detectors.custom[0]" not in text


def test_other_mistakes_name_their_key(tmp_path: Path) -> None:
    text = _issues(
        tmp_path,
        "default: true\n"
        "allow:\n"
        "  fingerprints: [not-hex]\n"
        "  credential_paths:\n"
        "    - {path: 'tools[*].headers', kinds: [no_such_kind]}\n"
        "    - {path: 'tools[?(@.x)]', kinds: [openai_api_key]}\n"
        "detectors:\n"
        "  custom:\n"
        "    - {kind: Falcon, pattern: 'x'}\n"
        "    - {kind: any_text, pattern: '.*'}\n"
        "    - {kind: github_token, pattern: 'ghp'}\n"
        "    - {kind: dup, pattern: 'a', decision: allow}\n"
        "outbound: {on_secret: mask}\n",
    )
    for where in (
        "t.yaml: allow.fingerprints[0]:",
        "t.yaml: allow.credential_paths[0].kinds:",
        "t.yaml: allow.credential_paths[1].path:",
        "t.yaml: detectors.custom[0].kind:",
        "t.yaml: detectors.custom[1].pattern:",
        "t.yaml: detectors.custom[3].decision:",
        "t.yaml: outbound.on_secret:",
    ):
        assert where in text, where
    assert "matches the empty string" in text


def test_a_custom_kind_may_not_shadow_a_builtin(tmp_path: Path) -> None:
    text = _issues(
        tmp_path,
        "default: true\ndetectors:\n  custom:\n    - {kind: github_token, pattern: 'ghp'}\n",
    )
    assert "t.yaml: detectors.custom:" in text
    assert "built-in" in text
