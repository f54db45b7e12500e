"""The guardian: every tool call in an answer judged before the agent can run it.

One call takes these steps, the first that decides wins:

1. the turn's circuit breaker, once tripped, replaces every further call;
2. the team's tool policy: ``tools.deny`` denies, ``tools.review`` holds the
   call for a reviewer of the team, ``tools.allow`` releases (in that order
   when several patterns match one name);
3. the deterministic assessor (:mod:`gateway.guard.guardian.rules`);
4. the optional LLM guardian (``guardian.classifier``), asked only about
   calls the rules allow: it can deny more, never release what the rules deny.

Every assessment passes the hard rules (critical denies; high needs the
user's medium or high authorization). A failure anywhere in the guardian
denies the call, as ``guard_failure``. Denials feed the breaker; each
judgement goes into the request's audit entry with its tool name, rule,
risk, authorization and a fingerprint of the arguments, never the arguments.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Protocol

from gateway.config.loader import LoadedConfig
from gateway.config.models import Tools
from gateway.config.teams import TeamMatch
from gateway.guard.findings import Fingerprinter
from gateway.guard.floor import shown
from gateway.guard.guardian.assessment import Assessment, breaker_reason, deny_reason, enforce
from gateway.guard.guardian.breaker import Breaker
from gateway.guard.guardian.rules import assess
from gateway.guard.pipeline import excerpt
from gateway.observe.logs import log_failure
from gateway.proxy.exchange import Exchange
from gateway.review.gate import Gate, ReviewCapacity
from gateway.review.model import Review, approval_digest, pending
from gateway.wire.calls import Conversation, ToolCall
from gateway.wire.replies import Ruling
from gateway.wire.replies.conversation import conversation_of

log = logging.getLogger("reefgate.guardian")

SESSION_HEADER = "x-reefgate-session"
# The review gate's direction for a held tool call.
DIRECTION = "tool_call"
_RISK_ORDER = {"low": 0, "medium": 1, "high": 2, "critical": 3}
# The rules read a command in a few microseconds per character: past this
# they run off the event loop, and past the bound they are not run at all
# (the call is denied as too large to check; no real command is that long).
_THREAD_CHARS = 16 * 1024
MAX_ASSESSED_CHARS = 256 * 1024


class Assessor(Protocol):
    """A second opinion on a call the rules allow (the LLM guardian)."""

    async def assess(self, call: ToolCall, conversation: Conversation) -> Assessment: ...


@dataclass(frozen=True, slots=True)
class _Judgement:
    ruling: Ruling
    record: dict[str, object]


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def _worse(a: Assessment, b: Assessment) -> Assessment:
    if b.outcome == "deny" and a.outcome != "deny":
        return b
    if a.outcome == "deny" and b.outcome != "deny":
        return a
    return b if _RISK_ORDER[b.risk_level] > _RISK_ORDER[a.risk_level] else a


class Guardian:
    def __init__(
        self,
        config: LoadedConfig,
        gate: Gate,
        fingerprint: Fingerprinter,
        assessor: Assessor | None = None,
    ) -> None:
        settings = config.gateway.guardian.breaker
        self.breaker = Breaker(
            consecutive=settings.consecutive,
            window=settings.window,
            window_denials=settings.window_denials,
            maxsize=settings.max_turns,
            ttl_s=settings.ttl_s,
        )
        self.gate = gate
        self.fingerprint = fingerprint
        self.assessor = assessor

    def judge_for(
        self,
        exchange: Exchange,
        team: TeamMatch,
        payload: object,
        destination: str,
        headers: Mapping[str, str],
    ) -> _Turn:
        return _Turn(self, exchange, team, payload, destination, headers.get(SESSION_HEADER))


class _Turn:
    """The calls of one answer, judged in the context of the request that asked for it."""

    def __init__(
        self,
        guardian: Guardian,
        exchange: Exchange,
        team: TeamMatch,
        payload: object,
        destination: str,
        session: str | None,
    ) -> None:
        self._guardian = guardian
        self._exchange = exchange
        self._team = team
        self._payload = payload
        self._destination = destination
        self._session = session
        self._conversation: Conversation | None = None

    @property
    def conversation(self) -> Conversation:
        # Read only when an answer holds a call: most answers are text.
        if self._conversation is None:
            self._conversation = conversation_of(self._payload)
        return self._conversation

    def _key(self) -> str:
        agent = f"{self._team.name}/{self._team.key_env or ''}"
        if self._session:
            return f"{agent}/session:{self._session}"
        return f"{agent}/turn:{self.conversation.turn_digest}"

    async def __call__(self, call: ToolCall) -> Ruling:
        try:
            judged = await self._judge(call)
        except Exception as exc:
            log_failure(log, "guardian", exc, self._exchange.request_id)
            judged = _Judgement(
                Ruling(False, _removed(call, "the guardian could not judge it, so it was not run")),
                {"outcome": "deny", "rule": "guard_failure"},
            )
        record: dict[str, object] = {
            "tool": shown(call.name),
            "kind": shown(call.kind),
            "arguments": self._guardian.fingerprint(call.arguments),
            **judged.record,
        }
        self._exchange.tool_calls.append(record)
        return judged.ruling

    async def _judge(self, call: ToolCall) -> _Judgement:
        guardian = self._guardian
        key = self._key()
        trip = guardian.breaker.tripped(key)
        if trip is not None:
            text = _removed(call, breaker_reason(trip.consecutive, trip.recent))
            return _Judgement(Ruling(False, text), {"outcome": "deny", "rule": "breaker"})
        tools = self._team.team.tools
        # A name two patterns match takes the stricter: deny, then review, then allow.
        if _matches(call.name, tools.deny):
            assessment = Assessment(
                "high", "unknown", "deny", "the team's tool policy does not allow this tool"
            )
            judged = self._ruled(call, assessment, "policy_deny")
        elif _matches(call.name, tools.review):
            judged = await self._review(call)
        elif _matches(call.name, tools.allow):
            judged = _Judgement(Ruling(True), {"outcome": "allow", "rule": "policy_allow"})
        else:
            judged = await self._assessed(call, tools)
        trip = guardian.breaker.record(key, denied=not judged.ruling.allow)
        if trip is not None:
            text = f"{judged.ruling.text}\n\n{breaker_reason(trip.consecutive, trip.recent)}"
            judged = _Judgement(Ruling(False, text), {**judged.record, "breaker": "tripped"})
        return judged

    async def _assessed(self, call: ToolCall, tools: Tools) -> _Judgement:
        conversation = self.conversation
        size = len(call.arguments)
        if size > MAX_ASSESSED_CHARS:
            assessment = Assessment(
                "high", "unknown", "deny", "the call's arguments are too large to check"
            )
            return self._ruled(call, assessment, "too_large")
        hosts, workspace = tools.allowed_hosts, tools.workspace
        if size > _THREAD_CHARS:
            assessment = await asyncio.to_thread(
                assess, call, conversation, allowed_hosts=hosts, workspace=workspace
            )
        else:
            assessment = assess(call, conversation, allowed_hosts=hosts, workspace=workspace)
        rule = "rules"
        assessor = self._guardian.assessor
        if assessor is not None and assessment.outcome == "allow":
            try:
                second = enforce(await assessor.assess(call, conversation))
            except Exception as exc:
                # The seed's rule: a review that fails is a deny.
                log.warning("LLM guardian failed: %s", type(exc).__name__)
                second = Assessment(
                    "high", "unknown", "deny", "the guardian review failed, so the call was not run"
                )
                rule = "guard_failure"
            else:
                rule = "llm"
            assessment = _worse(assessment, second) if rule == "llm" else second
        return self._ruled(call, enforce(assessment), rule)

    def _ruled(self, call: ToolCall, assessment: Assessment, rule: str) -> _Judgement:
        record: dict[str, object] = {
            "outcome": assessment.outcome,
            "rule": rule,
            "risk": assessment.risk_level,
            "authorization": assessment.user_authorization,
            "rationale": shown(assessment.rationale),
        }
        if assessment.outcome == "allow":
            return _Judgement(Ruling(True), record)
        return _Judgement(Ruling(False, _removed(call, deny_reason(assessment))), record)

    async def _review(self, call: ToolCall) -> _Judgement:
        """A call the team's policy sends to a reviewer: held, in the answer, like a request."""
        gate = self._guardian.gate
        team = self._team.name
        exchange = self._exchange
        source = self._team.source
        body = {"tool": call.name, "kind": call.kind, "arguments": call.arguments}
        policy_version = exchange.policy_version or ""
        digest = approval_digest(
            source=source,
            destination=self._destination,
            direction=DIRECTION,
            body=body,
            policy_version=policy_version,
        )
        review = await gate.decided(team, digest) if gate.may_know(team) else None
        if review is None:
            try:
                review = await gate.hold(
                    pending(
                        team=team,
                        digest=digest,
                        direction=DIRECTION,
                        source=source,
                        destination=self._destination,
                        category="tool_review",
                        reason=f"the team's policy sends tool {shown(call.name)} to review",
                        policy_version=policy_version,
                        excerpt=excerpt(f"{call.name} {call.arguments}"),
                        findings=(),
                    )
                )
            except ReviewCapacity:
                text = _removed(call, "the team already has too many calls waiting for review")
                return _Judgement(
                    Ruling(False, text), {"outcome": "deny", "rule": "review_capacity"}
                )
        settings = gate.reviews.settings(team)
        if review.status == "pending" and settings.hold == "wait" and settings.hold_timeout_s > 0:
            review = await _wait(gate, review, settings.hold_timeout_s)
        record: dict[str, object] = {"rule": "review", "review_id": review.id}
        if review.status == "approved":
            return _Judgement(Ruling(True), {**record, "outcome": "allow"})
        if review.status == "pending":
            why = (
                f"it is waiting for a reviewer (review {review.id}); tell the user, and "
                "ask for the same call again once it is approved"
            )
            return _Judgement(Ruling(False, _removed(call, why)), {**record, "outcome": "review"})
        why = f"a reviewer denied it (review {review.id})"
        return _Judgement(Ruling(False, _removed(call, why)), {**record, "outcome": "deny"})


async def _wait(gate: Gate, review: Review, timeout_s: float) -> Review:
    try:
        async with asyncio.timeout(timeout_s):
            return await gate.wait(review)
    except TimeoutError:
        return review


def _removed(call: ToolCall, why: str) -> str:
    """What the model reads in place of a call: which call, and why it was not run."""
    return f"[reefgate] The call to tool `{shown(call.name)}` was removed and not run: {why}"
