"""Every token-format rule's own samples, through the public ``scan``.

A rule that stops finding its format, or starts finding its near-misses, fails
here by name; a kind with no sample at all fails ``test_every_kind_has_a_sample``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.guard.detectors.secrets import KINDS, scan
from gateway.guard.detectors.secrets.contextual import CONTEXTUAL
from gateway.guard.detectors.secrets.rules import RULES, RulesError, load

_BY_ID = {r.id: r for r in RULES}


def _kinds(text: str) -> set[str]:
    return {f.kind for f in scan(text)}


# Alone, and inside the text agents paste: an env line, a JSON value, a sentence.
_WRAPPINGS = ("{}", "export TOKEN={}\n", '{{"token": "{}"}}', "use {} for the deploy")


@pytest.mark.parametrize("rule_id", sorted(_BY_ID))
def test_rule_finds_its_match_samples(rule_id: str) -> None:
    rule = _BY_ID[rule_id]
    for sample in rule.matches:
        for wrap in _WRAPPINGS:
            text = wrap.format(sample)
            found = [f for f in scan(text) if f.kind == rule.kind]
            assert found, (rule_id, wrap)
            # The finding covers the token itself (or the value the rule names), not a part.
            start, end = text.index(sample), text.index(sample) + len(sample)
            if rule.pattern.groups:
                vm = rule.pattern.search(text)
                assert vm is not None, rule_id
                start, end = vm.span("value")
            assert any(f.start <= start and f.end >= end for f in found), (rule_id, wrap)


@pytest.mark.parametrize("rule_id", sorted(_BY_ID))
def test_rule_ignores_its_no_match_samples(rule_id: str) -> None:
    rule = _BY_ID[rule_id]
    for sample in rule.non_matches:
        assert rule.kind not in _kinds(sample), rule_id


@pytest.mark.parametrize("kind", sorted(CONTEXTUAL))
def test_contextual_kind_samples(kind: str) -> None:
    samples = CONTEXTUAL[kind]
    for text in samples.matches:
        assert kind in _kinds(text), (kind, text[:40])
    for text in samples.non_matches:
        assert kind not in _kinds(text), (kind, text[:40])


def test_every_kind_has_a_sample() -> None:
    sampled = {r.kind for r in RULES} | set(CONTEXTUAL)
    assert sorted(KINDS - sampled) == []
    assert sorted(sampled - KINDS) == []


def test_kinds_are_derived_from_the_rules() -> None:
    assert {r.kind for r in RULES} <= KINDS


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("- {id: x, kind: k, pattern: 'a', match: [a], no_match: [b]}", "exactly one of"),
        ("- {id: x, kind: k, prefixes: [ab], pattern: 'a', match: [a], no_match: [b]}", "end with"),
        ("- {id: x, kind: k, keywords: [ab], pattern: '(', match: [a], no_match: [b]}", "compile"),
        ("- {id: x, kind: k, keywords: [ab], pattern: 'a', match: [a]}", "no_match"),
        (
            "- {id: x, kind: k, keywords: [ab], pattern: 'a', match: [a], no_match: [b], y: 1}",
            "unknown",
        ),
        ("- {id: X, kind: k, keywords: [ab], pattern: 'a', match: [a], no_match: [b]}", "id"),
        ("- {id: x, kind: k, keywords: [ab], pattern: '(a)', match: [a], no_match: [b]}", "group"),
        (
            "- {id: x, kind: k, keywords: [ab], pattern: 'a', match: [a], no_match: [b]}\n"
            "- {id: y, kind: k, keywords: [ab], pattern: 'a', match: [a], no_match: [b]}",
            "literal ab already in 'x'",
        ),
    ],
)
def test_a_bad_rule_is_refused_by_name(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n" + "\n".join("  " + line for line in entry.splitlines()) + "\n")
    with pytest.raises(RulesError) as err:
        load(path)
    assert message in str(err.value)
    assert (
        "rule 'x'" in str(err.value) or "rule 'y'" in str(err.value) or "entry 0" in str(err.value)
    )


def test_coverage_table_matches_the_rules() -> None:
    from gateway.guard.detectors.secrets.coverage import COVERAGE_FILE, render

    assert COVERAGE_FILE.read_text(encoding="utf-8") == render(), (
        "COVERAGE.md is stale: python -m gateway.guard.detectors.secrets.coverage"
    )
    table = render()
    for kind in KINDS:
        assert f"| `{kind}` |" in table
