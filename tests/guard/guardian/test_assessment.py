"""Reading a reviewer's assessment the way the Go guardian did, and the hard rules."""

from __future__ import annotations

import json

import pytest

from gateway.guard.guardian.assessment import (
    DEFAULT_ALLOW_RATIONALE,
    DEFAULT_DENY_RATIONALE,
    FORCED_CRITICAL_RATIONALE,
    FORCED_HIGH_RATIONALE,
    Assessment,
    AssessmentError,
    Authorization,
    RiskLevel,
    breaker_reason,
    deny_reason,
    enforce,
    parse_assessment,
)


def obj(**fields: object) -> str:
    return json.dumps(fields)


def test_a_bare_object_is_read_field_by_field() -> None:
    a = parse_assessment(
        obj(risk_level="medium", user_authorization="low", outcome="allow", rationale="fine")
    )
    assert a == Assessment("medium", "low", "allow", "fine")


def test_an_object_wrapped_in_prose_is_read() -> None:
    text = "My review:\n" + obj(risk_level="low", outcome="allow", rationale="ok") + "\nDone."
    assert parse_assessment(text) == Assessment("low", "unknown", "allow", "ok")


def test_the_slice_runs_from_the_first_to_the_last_brace() -> None:
    nested = '{"outcome": "allow", "evidence": {"file": "a"}, "risk_level": "low"}'
    assert parse_assessment(f"so {nested} there").outcome == "allow"
    # A stray brace before the object makes the slice invalid: no guessing further.
    with pytest.raises(AssessmentError):
        parse_assessment('I think {maybe} {"outcome": "allow"}')


def test_a_top_level_array_fails_but_its_object_slice_is_read_as_go_does() -> None:
    assert parse_assessment('[{"outcome": "allow"}]').outcome == "allow"


@pytest.mark.parametrize(
    "text", ["", "   \n\t", "allow", "42", "[1, 2]", '"{\\"outcome\\": \\"allow\\"}"', "{oops}"]
)
def test_output_without_a_readable_object_is_an_error(text: str) -> None:
    with pytest.raises(AssessmentError):
        parse_assessment(text)


def test_json_null_reads_as_an_empty_object_and_so_denies() -> None:
    assert parse_assessment("null") == parse_assessment("{}")
    assert parse_assessment("{}") == Assessment("high", "unknown", "deny", DEFAULT_DENY_RATIONALE)


def test_missing_fields_take_the_seed_defaults() -> None:
    allow = parse_assessment(obj(outcome="allow"))
    assert allow == Assessment("low", "unknown", "allow", DEFAULT_ALLOW_RATIONALE)
    deny = parse_assessment(obj(outcome="deny", user_authorization=""))
    assert deny == Assessment("high", "unknown", "deny", DEFAULT_DENY_RATIONALE)
    blank = parse_assessment(obj(outcome="allow", rationale="  \n"))
    assert blank.rationale == DEFAULT_ALLOW_RATIONALE


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [("allow", "allow"), (" ALLOW\n", "allow"), ("Allow\u3000", "allow"), ("deny", "deny"),
     ("maybe", "deny"), ("allowed", "deny"), ("", "deny"), ("allow\x1c", "deny")],
)  # fmt: skip
def test_only_allow_allows(outcome: str, expected: str) -> None:
    # U+3000 is space to Go's TrimSpace; U+001C is not, though Python's strip() removes it.
    assert parse_assessment(obj(risk_level="low", outcome=outcome)).outcome == expected


def test_enum_values_are_trimmed_and_lowercased() -> None:
    a = parse_assessment(obj(risk_level=" Medium ", user_authorization="HIGH", outcome="allow"))
    assert (a.risk_level, a.user_authorization) == ("medium", "high")


@pytest.mark.parametrize(
    "fields",
    [
        {"risk_level": "severe", "outcome": "deny"},
        {"risk_level": "   ", "outcome": "allow"},
        {"user_authorization": "full", "outcome": "allow"},
        {"user_authorization": "none", "outcome": "deny"},
    ],
)
def test_unknown_enum_values_fail_closed(fields: dict[str, str]) -> None:
    with pytest.raises(AssessmentError):
        parse_assessment(json.dumps(fields))


@pytest.mark.parametrize(
    "text",
    [
        '{"outcome": true}',
        '{"outcome": "allow", "risk_level": 1}',
        '{"outcome": "allow", "rationale": ["a"]}',
        '{"outcome": "allow", "user_authorization": {}}',
        '{"outcome": "allow", "extra": NaN}',
    ],
)
def test_a_field_of_the_wrong_type_or_invalid_json_fails(text: str) -> None:
    with pytest.raises(AssessmentError):
        parse_assessment(text)
    with pytest.raises(AssessmentError):
        parse_assessment(f"Verdict: {text} (end)")


def test_unknown_keys_are_ignored_and_null_sets_nothing() -> None:
    text = '{"outcome": "allow", "confidence": 0.9, "notes": [1, {"x": null}], "rationale": null}'
    assert parse_assessment(text) == Assessment("low", "unknown", "allow", DEFAULT_ALLOW_RATIONALE)
    assert parse_assessment('{"outcome": "allow", "OUTCOME": null}').outcome == "allow"


def test_keys_match_without_case_and_the_last_one_wins() -> None:
    text = '{"Outcome": "allow", "RISK_LEVEL": "medium", "User_Authorization": "low"}'
    assert parse_assessment(text) == Assessment("medium", "low", "allow", DEFAULT_ALLOW_RATIONALE)
    assert parse_assessment('{"outcome": "allow", "OUTCOME": "deny"}').outcome == "deny"
    assert parse_assessment('{"OUTCOME": "deny", "outcome": "allow"}').outcome == "allow"


def test_keys_fold_like_go_including_long_s_and_kelvin() -> None:
    long_s = parse_assessment('{"ri\u017fk_level": "medium", "outcome": "allow"}')
    assert long_s.risk_level == "medium"
    kelvin = parse_assessment('{"ris\u212a_level": "medium", "outcome": "allow"}')
    assert kelvin.risk_level == "medium"
    # A dotted capital I does not fold to "i" in Go: the key is unknown and ignored.
    dotted = parse_assessment('{"r\u0130sk_level": "medium", "outcome": "allow"}')
    assert dotted.risk_level == "low"


def test_unpaired_surrogates_in_the_rationale_are_replaced() -> None:
    a = parse_assessment('{"outcome": "deny", "rationale": "bad \\ud800 byte"}')
    assert a.rationale == "bad \ufffd byte"
    a.rationale.encode("utf-8")


def test_errors_do_not_repeat_the_output() -> None:
    secret = "sk-" + "Z" * 40
    for text in (f"not json {secret}", obj(risk_level=secret, outcome="deny")):
        with pytest.raises(AssessmentError) as caught:
            parse_assessment(text)
        assert secret not in str(caught.value)


def test_critical_is_always_denied() -> None:
    forced = parse_assessment(obj(risk_level="critical", outcome="allow"))
    assert (forced.outcome, forced.rationale) == ("deny", FORCED_CRITICAL_RATIONALE)
    own = parse_assessment(obj(risk_level="critical", outcome="allow", rationale="wipes disk"))
    assert (own.outcome, own.rationale) == ("deny", "wipes disk")
    authorized = obj(risk_level="critical", user_authorization="high", outcome="allow")
    assert parse_assessment(authorized).outcome == "deny"


@pytest.mark.parametrize(
    ("authorization", "outcome"),
    [("unknown", "deny"), ("low", "deny"), ("medium", "allow"), ("high", "allow")],
)
def test_high_risk_needs_medium_authorization(authorization: Authorization, outcome: str) -> None:
    a = parse_assessment(obj(risk_level="high", user_authorization=authorization, outcome="allow"))
    assert a.outcome == outcome
    expected = FORCED_HIGH_RATIONALE if outcome == "deny" else DEFAULT_ALLOW_RATIONALE
    assert a.rationale == expected


@pytest.mark.parametrize("risk", ["low", "medium", "high", "critical"])
@pytest.mark.parametrize("authorization", ["unknown", "low", "medium", "high"])
def test_enforce_never_turns_a_deny_into_an_allow_and_is_idempotent(
    risk: RiskLevel, authorization: Authorization
) -> None:
    denied = Assessment(risk, authorization, "deny", "r")
    assert enforce(denied) == denied
    allowed = enforce(Assessment(risk, authorization, "allow", "r"))
    assert enforce(allowed) == allowed
    if risk in ("low", "medium"):
        assert allowed.outcome == "allow"


def test_model_facing_reasons_carry_the_facts() -> None:
    reason = deny_reason(Assessment("high", "low", "deny", "it deletes the cache"))
    assert "high" in reason and "low" in reason and "it deletes the cache" in reason
    trip = breaker_reason(3, 7)
    assert "3" in trip and "7" in trip
    assert "stop" in trip.lower() and "user" in trip.lower() and "instructions" in trip.lower()
