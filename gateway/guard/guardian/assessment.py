"""The guardian's judgement of one tool call, read from a reviewer's JSON, and the hard rules.

Every assessment, whether the deterministic rules made it or a model wrote it,
goes through :func:`enforce`: a critical risk is always refused, and a high risk
is allowed only when the user clearly asked for it. A reviewer's output is read
the way the original guardian read it with Go's ``encoding/json``; anything
that cannot be read fails closed with :class:`AssessmentError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Literal

RiskLevel = Literal["low", "medium", "high", "critical"]
Authorization = Literal["unknown", "low", "medium", "high"]
Outcome = Literal["allow", "deny"]

RISK_LEVELS: dict[str, RiskLevel] = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "critical": "critical",
}
AUTHORIZATIONS: dict[str, Authorization] = {
    "unknown": "unknown",
    "low": "low",
    "medium": "medium",
    "high": "high",
}
RISK_RANK: dict[RiskLevel, int] = {"low": 0, "medium": 1, "high": 2, "critical": 3}
AUTHORIZATION_RANK: dict[Authorization, int] = {"unknown": 0, "low": 1, "medium": 2, "high": 3}

# Filled in when a reviewer gives no reason. enforce() recognises the allow
# text, so that a forced deny does not go out saying "allowed".
DEFAULT_ALLOW_RATIONALE = "the reviewer allowed this call as low risk without giving a reason"
DEFAULT_DENY_RATIONALE = "the reviewer refused this call without giving a reason"
FORCED_CRITICAL_RATIONALE = (
    "the reviewer would have allowed a call it rated critical; critical calls are always refused"
)
FORCED_HIGH_RATIONALE = (
    "the reviewer would have allowed a high-risk call that the user did not clearly ask for; "
    "refused"
)

# Go's strings.TrimSpace set (unicode.IsSpace). str.strip() would also remove
# U+001C..U+001F, so " allow\x1c" would read as allow here but not in Go.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)
_FIELDS = ("risk_level", "user_authorization", "outcome", "rationale")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Assessment:
    risk_level: RiskLevel
    user_authorization: Authorization
    outcome: Outcome
    rationale: str


class AssessmentError(ValueError):
    """A reviewer's output that cannot be read as an assessment: the call is refused."""


class _Pairs(list[tuple[str, object]]):
    """A JSON object's members in document order, as Go's decoder visits them."""


def _go_trim(text: str) -> str:
    return text.strip(_GO_SPACE)


def _go_fold(key: str) -> str:
    # encoding/json falls back to a case-insensitive match under Unicode simple
    # folding. For these ASCII field names that is ASCII case plus two letters
    # that fold into ASCII: LONG S into "s" and KELVIN SIGN into "k" (which
    # str.lower() already maps).
    return key.replace("\u017f", "s").lower()


def _reject_constant(name: str) -> object:
    raise ValueError("NaN and Infinity are not JSON")


def _decode(text: str) -> dict[str, str] | None:
    """The assessment's fields as Go would decode them into its struct; None if Go would fail."""
    try:
        value = json.loads(text, object_pairs_hook=_Pairs, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    if value is None:  # JSON null leaves Go's struct at its zero value
        return {}
    if not isinstance(value, _Pairs):
        return None
    fields: dict[str, str] = {}
    for key, member in value:
        exact = key if key in _FIELDS else None
        field = exact or next((f for f in _FIELDS if f == _go_fold(key)), None)
        if field is None or member is None:  # unknown keys are skipped; null sets nothing
            continue
        if not isinstance(member, str):
            return None
        # Go replaces unpaired surrogates with U+FFFD; keeping them would break encoding later.
        fields[field] = _SURROGATE.sub("\ufffd", member)
    return fields


def parse_assessment(text: str) -> Assessment:
    """Read a reviewer's output: one JSON object, alone or wrapped in prose."""
    text = _go_trim(text)
    if not text:
        raise AssessmentError("the reviewer's output is empty")
    fields = _decode(text)
    if fields is None:
        start, end = text.find("{"), text.rfind("}")
        if start >= 0 and end > start:
            fields = _decode(text[start : end + 1])
    if fields is None:
        # The output is not quoted: it may repeat whatever secret the call held.
        raise AssessmentError("the reviewer's output holds no readable assessment object")
    return _normalize(fields)


def _normalize(fields: dict[str, str]) -> Assessment:
    outcome: Outcome = "allow" if _go_trim(fields.get("outcome", "")).lower() == "allow" else "deny"
    risk_text = fields.get("risk_level", "")
    if risk_text == "":
        risk_text = "low" if outcome == "allow" else "high"
    risk = RISK_LEVELS.get(_go_trim(risk_text).lower())
    if risk is None:
        raise AssessmentError("the reviewer's risk_level is not one of low, medium, high, critical")
    authorization = AUTHORIZATIONS.get(
        _go_trim(fields.get("user_authorization") or "unknown").lower()
    )
    if authorization is None:
        raise AssessmentError(
            "the reviewer's user_authorization is not one of unknown, low, medium, high"
        )
    rationale = fields.get("rationale", "")
    if not _go_trim(rationale):
        rationale = DEFAULT_ALLOW_RATIONALE if outcome == "allow" else DEFAULT_DENY_RATIONALE
    return enforce(Assessment(risk, authorization, outcome, rationale))


def enforce(a: Assessment) -> Assessment:
    """Apply the rules no reviewer can override."""
    if a.risk_level == "critical" and a.outcome != "deny":
        forced = FORCED_CRITICAL_RATIONALE
    elif (
        a.risk_level == "high"
        and a.outcome == "allow"
        and a.user_authorization not in ("medium", "high")
    ):
        forced = FORCED_HIGH_RATIONALE
    else:
        return a
    # A reviewer's own reason is kept: it says more than ours would.
    rationale = forced if a.rationale == DEFAULT_ALLOW_RATIONALE else a.rationale
    return replace(a, outcome="deny", rationale=rationale)


def deny_reason(a: Assessment) -> str:
    """What the model reads in place of a refused call."""
    return (
        f"The gateway's guardian refused this tool call "
        f"(risk: {a.risk_level}; user authorization: {a.user_authorization}). "
        f"Reason: {a.rationale}"
    )


def breaker_reason(consecutive: int, recent: int) -> str:
    """What the model reads once too many of its calls were refused in one turn."""
    return (
        f"The gateway's guardian has refused too many tool calls in this turn "
        f"({consecutive} in a row, {recent} among the latest reviews). Do not look for "
        "another way to do the same thing: stop this approach, tell your user what you were "
        "trying to do and why it was refused, and wait for their explicit instructions."
    )
