"""Guard requests, verdicts, and the admission rules every verdict must pass.

A verdict from a model is admitted only when it is exactly the expected
object, from the pinned model, for the policy version in force. Anything else
becomes a `guard_failure` deny: the gateway fails closed, always.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, Literal, cast

from gateway.canonical import digest

Direction = Literal["outbound", "inbound"]
VerdictDecision = Literal["allow", "deny", "review"]

GUARD_FAILURE: Final = "guard_failure"
GUARD_FAILURE_REASON: Final = "Guard unavailable or invalid."
RULES_MAX_CHARS: Final = 2000
# Largest provider response read, in UTF-16 code units as the reference counts.
MAX_RESPONSE_CHARS: Final = 262_144

_PINNED: Final = re.compile(r"(?:-[0-9]{8}|-[0-9]{4}-[0-9]{2}-[0-9]{2})\Z")
# OpenAI publishes no dated snapshots for this generation; these exact ids are
# accepted as immutable (a provider-side swap would go unseen: accepted risk).
# Their bare family alias stays rejected.
IMMUTABLE_MODELS: Final = frozenset({"gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"})
_VERDICT_KEYS: Final = frozenset({"decision", "category", "reason", "model", "policyVersion"})
_DECISIONS: Final = frozenset({"allow", "deny", "review"})
# JS String.prototype.trim() whitespace: what the reference strips around a verdict.
_JS_SPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class AdmissionError(ValueError):
    """A verdict or provider response that must not be admitted."""


def js_length(text: str) -> int:
    """Length in UTF-16 code units, as the reference measures strings."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def is_pinned_model(model: str) -> bool:
    return bool(_PINNED.search(model)) or model in IMMUTABLE_MODELS


def assert_pinned_model(model: str) -> None:
    if not is_pinned_model(model):
        raise ValueError(
            f"guard model {model!r} must be a dated snapshot (ending -YYYYMMDD or -YYYY-MM-DD) "
            f"or a documented immutable id ({', '.join(sorted(IMMUTABLE_MODELS))}); "
            "bare aliases can change behind the same name"
        )


def check_rules(text: str | None) -> None:
    if text is None:
        return
    if not js_trim(text) or js_length(text) > RULES_MAX_CHARS:
        raise ValueError(f"guard rules must be non-blank and at most {RULES_MAX_CHARS} characters")


def effective_policy_version(base: str, outbound: str | None, inbound: str | None) -> str:
    """The policy identity: editing operator rules changes it, failing pending approvals closed.

    The full digest is kept: approvals hash this string, so a truncated suffix
    would let two rule sets share an approval identity.
    """
    if outbound is None and inbound is None:
        return base
    return f"{base}+{digest({'inbound': inbound or '', 'outbound': outbound or ''})}"


@dataclass(frozen=True, slots=True)
class GuardRequest:
    direction: Direction
    source: str
    destination: str
    text: str
    policy_version: str

    def to_json(self) -> str:
        # Key order and compact separators as the reference's JSON.stringify.
        return json.dumps(
            {
                "direction": self.direction,
                "source": self.source,
                "destination": self.destination,
                "text": self.text,
                "policyVersion": self.policy_version,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: VerdictDecision
    category: str
    reason: str
    model: str
    policy_version: str

    def as_dict(self) -> dict[str, str]:
        return {
            "decision": self.decision,
            "category": self.category,
            "reason": self.reason,
            "model": self.model,
            "policyVersion": self.policy_version,
        }


def guard_failure(model: str, policy_version: str) -> Verdict:
    return Verdict("deny", GUARD_FAILURE, GUARD_FAILURE_REASON, model, policy_version)


def parse_verdict(value: object) -> Verdict:
    if not isinstance(value, dict) or set(value) != _VERDICT_KEYS:
        raise AdmissionError(
            "verdict must have exactly the keys " + ", ".join(sorted(_VERDICT_KEYS))
        )
    decision = value["decision"]
    category = value["category"]
    reason = value["reason"]
    model = value["model"]
    policy_version = value["policyVersion"]
    if decision not in _DECISIONS:
        raise AdmissionError("verdict decision is not allow, deny or review")
    if not (
        isinstance(category, str)
        and 1 <= js_length(category) <= 128
        and isinstance(reason, str)
        and 1 <= js_length(reason) <= 512
        and isinstance(model, str)
        and isinstance(policy_version, str)
        and policy_version
    ):
        raise AdmissionError("verdict fields out of range")
    return Verdict(cast(VerdictDecision, decision), category, reason, model, policy_version)


def admit(raw: object, pinned_model: str, policy_version: str) -> Verdict:
    """The admitted verdict, or a guard_failure deny."""
    try:
        verdict = parse_verdict(raw)
        if not is_pinned_model(verdict.model):
            raise AdmissionError("verdict model is not pinned")
        if verdict.model != pinned_model or verdict.policy_version != policy_version:
            raise AdmissionError("verdict evidence does not match the pin or the policy version")
    except AdmissionError:
        return guard_failure(pinned_model, policy_version)
    return verdict


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise AdmissionError("duplicate key in verdict")
        out[key] = value
    return out


def _no_constants(name: str) -> object:
    raise AdmissionError(f"{name} is not JSON")


def verdict_object(text: str, envelope_model: str) -> dict[str, object]:
    """The model's verdict text as an object, with `model` taken from the provider envelope.

    The text must be one bare JSON object: no prose, no code fence, no
    duplicate keys, and no `model` of its own (the model must not vouch for itself).
    """
    trimmed = js_trim(text)
    if not (trimmed.startswith("{") and trimmed.endswith("}")):
        raise AdmissionError("verdict is not a bare JSON object")
    try:
        value = json.loads(trimmed, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise AdmissionError("verdict is not valid JSON") from exc
    if not isinstance(value, dict):
        raise AdmissionError("verdict is not an object")
    if "model" in value:
        raise AdmissionError("verdict carries its own model")
    value["model"] = envelope_model
    return value


def parse_envelope(body: str) -> dict[str, object]:
    """A provider response body as an object; duplicate keys there are tolerated (last wins)."""
    if js_length(body) > MAX_RESPONSE_CHARS:
        raise AdmissionError("provider response too large")
    try:
        value = json.loads(body, parse_constant=_no_constants)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise AdmissionError("provider response is not JSON") from exc
    if not isinstance(value, dict):
        raise AdmissionError("provider response is not an object")
    return value
