"""The guard pipeline: from a request's segments to one decision.

1. The deterministic floor (secrets) runs on every segment; its deny is final
   and nothing below can lift it.
2. Untrusted segments (tool results, and per team documents and model output)
   get the inbound check: the embedded injection detector, plus the LLM
   classifier when one is configured.
3. With a classifier configured, every segment also gets the outbound check.

A request's decision is the most severe of its segments'. Verdicts are cached
per segment, keyed by sha256(canonical{direction, text, policyVersion, model}),
because agents resend the whole conversation every turn and only what is new
needs a fresh look; identical segments in flight share one classification.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from json.encoder import encode_basestring as _encode_str
from typing import Final, cast

import aiohttp
from cachetools import TTLCache

from gateway.canonical import digest
from gateway.config.models import Allow, GatewayConfig, Inbound, Rules, Team
from gateway.config.models import Classifier as ClassifierSettings
from gateway.guard import floor
from gateway.guard.allowances import Allowances, AllowPatterns
from gateway.guard.cache import TextCache
from gateway.guard.cache import now as monotonic
from gateway.guard.classifiers.client import Classifier
from gateway.guard.classifiers.providers import (
    AnthropicMessages,
    OpenAICompatibleChat,
    OpenAIResponses,
    Provider,
)
from gateway.guard.decision import ALLOW, Allowance, Decision, Evidence, severity
from gateway.guard.detectors import injection
from gateway.guard.detectors.base import Detector, Scope
from gateway.guard.detectors.builtin import INJECTION, SECRETS
from gateway.guard.detectors.custom import CustomRules
from gateway.guard.findings import Fingerprinter
from gateway.guard.floor import DEFAULT as DEFAULT_FLOOR
from gateway.guard.redact_payload import redact_payload
from gateway.guard.verdict import (
    GUARD_FAILURE,
    Direction,
    GuardRequest,
    Verdict,
    effective_policy_version,
)
from gateway.wire.base import Segment, Trust

# Every text is cached, short ones too: a lookup is cheaper than the detectors'
# fixed cost per call, and tool names and short replies recur on every turn.
# Texts up to this long are their own cache key (a dict lookup hashes and
# compares them faster than sha256 digests them); longer ones are keyed by
# digest. The characters held in keys are bounded in all.
_KEY_BY_VALUE_CHARS: Final = 16 * 1024
_KEY_CHARS_IN_ALL: Final = 16 * 1024 * 1024

# Texts longer than this are inspected in overlapping windows, and the event
# loop gets a turn after every _YIELD_CHARS inspected. The overlap is longer
# than any secret or phrase the detectors look for, private keys included.
_WINDOW = 256 * 1024
_OVERLAP = 32 * 1024
_YIELD_CHARS = 64 * 1024

# The identity of the embedded injection detector in cache keys and verdicts.
HEURISTIC_MODEL: Final = "reefgate-heuristics-2"
# The identity of a team's custom rules in the verdicts they produce.
CUSTOM_MODEL: Final = "reefgate-custom-rules"

# A path component that could itself carry data (an object key chosen by the
# client) is not echoed back; identifiers and indexes are.
_SAFE_PATH: Final = re.compile(r"^[\w.\[\]\- ():,]{0,200}$")

# Enum members read once: `Trust.X` costs a class attribute lookup per segment.
_UNTRUSTED: Final = Trust.UNTRUSTED
_OPAQUE: Final = Trust.OPAQUE

_DOCUMENT_PATH: Final = re.compile(r"document|input_file|\.file\b|search_result")


def segment_key(direction: str, text: str, policy_version: str, model: str) -> str:
    """sha256(canonical{direction, text, policyVersion, model}), built directly.

    The general canonical encoder walks the value first; for this fixed shape
    the sorted-key form is known, and the C string encoder writes strings
    exactly as the canonical form does except for lone surrogates, which fail
    the UTF-8 encode and take the exact path.
    """
    try:
        data = (
            '{"direction":'
            + _encode_str(direction)
            + ',"model":'
            + _encode_str(model)
            + ',"policyVersion":'
            + _encode_str(policy_version)
            + ',"text":'
            + _encode_str(text)
            + "}"
        ).encode("utf-8")
    except UnicodeEncodeError:
        return digest(
            {"direction": direction, "text": text, "policyVersion": policy_version, "model": model}
        )
    return hashlib.sha256(data).hexdigest()


# Roles that may stand in for a location that cannot be shown; they are the
# adapters' own labels, never a value the client chose.
_SHOWN_ROLES: Final = frozenset(
    {"system", "developer", "user", "assistant", "tool", "function", "request", "unknown"}
    | {"path", "query", "field", "file", "header", "body", "peer"}
)


def _echoable(where: str) -> bool:
    """Whether a location may be shown as it is: client-chosen keys could carry data."""
    return _SAFE_PATH.match(where) is not None and not floor.holds_secret(where)


def _shown_path(path: str) -> str:
    return path if _echoable(path) else "a field of the request"


def _safe_where(segment: Segment) -> str:
    where = segment.where()
    if _echoable(where):
        return where
    parts = [f"role {segment.role}"] if segment.role in _SHOWN_ROLES else []
    if segment.index is not None:
        parts.append(f"message {segment.index}")
    return ", ".join(parts) or "a field of the request"


@dataclass(frozen=True, slots=True)
class Found:
    """A floor finding as it is kept: never the value."""

    kind: str
    fingerprint: str
    # The ``allow.patterns`` (of any team) that match the value whole.
    patterns: tuple[str, ...] = ()


# _Seen and Inspection are made for every request: plain classes with an
# __init__ of their own, since a dataclass's generated __init__ is Python
# code that this compiled module would run each time.
class _Seen:
    __slots__ = ("findings", "injection")

    def __init__(
        self,
        findings: tuple[Found, ...],
        injection: injection.InjectionAssessment | None = None,
    ) -> None:
        self.findings = findings
        self.injection = injection


class MemoOwner:
    """A guard's mark on the floor results it left on segments, one per floor key."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TeamPolicy:
    name: str
    policy_version: str
    rules: Rules
    inbound: Inbound
    classifier: Classifier | None
    # The team's detectors: the floor runs those of scope EVERY (the built-in
    # secret rules and the team's custom rules, in one pass) on every segment;
    # the inbound check runs those of scope UNTRUSTED on untrusted text.
    # The module's name is shadowed by the field's inside the class body.
    floor: floor.Floor = DEFAULT_FLOOR
    inbound_detectors: tuple[Detector, ...] = (INJECTION,)
    allow: Allowances | None = None
    on_secret: str = "deny"
    # Marks the floor results this guard memoizes on segments (`_inspect`);
    # None when the guard caches nothing.
    memo: MemoOwner | None = None


def build_provider(settings: ClassifierSettings, env: Mapping[str, str]) -> Provider | None:
    if settings.provider == "none":
        return None
    assert settings.pinned_model is not None  # the config model guarantees it
    key = env.get(settings.api_key_env, "") if settings.api_key_env else ""
    base = settings.resolved_base_url()
    if settings.provider == "openai":
        return OpenAIResponses(base, settings.pinned_model, key)
    if settings.provider == "anthropic":
        return AnthropicMessages(base, settings.pinned_model, key)
    return OpenAICompatibleChat(base, settings.pinned_model, key)


class Guard:
    def __init__(
        self,
        gateway: GatewayConfig,
        teams: Mapping[str, Team],
        env: Mapping[str, str],
        fingerprint: Fingerprinter,
    ) -> None:
        self._gateway = gateway
        self.fingerprint = fingerprint
        self._teams = dict(teams)
        self._env = dict(env)
        cache = gateway.guard.cache
        self._texts: TextCache[str | bytes | tuple[object, ...], _Seen] | None = (
            TextCache(cache.size, cache.ttl_s, _KEY_CHARS_IN_ALL) if cache.size else None
        )
        self._verdicts: TTLCache[str, Verdict] | None = (
            TTLCache(maxsize=cache.size, ttl=cache.ttl_s) if cache.size else None
        )
        self._in_flight: dict[str, asyncio.Future[Verdict]] = {}
        self._policies: dict[str, TeamPolicy] = {}
        # One token per floor key, kept across `bind`s (see `_inspect`).
        self._memo_owners: dict[tuple[object, ...], MemoOwner] = {}
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._allow_patterns = AllowPatterns(
            {src for team in self._teams.values() for src in team.allow.patterns}
        )
        self.bind(None)
        # Counters the benchmarks and /metrics read: detector input, classifier
        # calls, and lookups of the floor's per-text cache and the verdict cache.
        self.bytes_scanned = 0
        self.classifier_calls = 0
        self.text_cache_hits = 0
        self.text_cache_misses = 0
        self.verdict_cache_hits = 0
        self.verdict_cache_misses = 0

    def bind(self, session: aiohttp.ClientSession | None) -> None:
        """Build the per-team policies; classifiers need the shared session."""
        base = self._gateway.guard
        classifiers: dict[ClassifierSettings, Classifier | None] = {}
        for name, team in {**self._teams, "": Team(default=True)}.items():
            settings = (
                team.guard.classifier if team.guard.classifier is not None else base.classifier
            )
            if settings not in classifiers:
                provider = build_provider(settings, self._env)
                classifiers[settings] = (
                    Classifier(provider, session, settings.timeout_ms)
                    if provider is not None and session is not None
                    else None
                )
                if classifiers[settings] is not None:
                    self._semaphores[id(classifiers[settings])] = asyncio.Semaphore(
                        settings.max_concurrency
                    )
            rules = team.rules
            detectors: tuple[Detector, ...] = (SECRETS, INJECTION)
            if team.detectors.custom:
                detectors = (SECRETS, CustomRules(team.detectors.custom), INJECTION)
            team_floor = floor.Floor(detectors) if team.detectors.custom else DEFAULT_FLOOR
            memo = None
            if self._texts is not None:
                memo = self._memo_owners.setdefault(team_floor.key, MemoOwner())
            self._policies[name] = TeamPolicy(
                name=name,
                policy_version=effective_policy_version(
                    base.policy_version, rules.outbound, rules.inbound
                ),
                rules=rules,
                inbound=team.inbound,
                classifier=classifiers[settings],
                floor=team_floor,
                inbound_detectors=tuple(d for d in detectors if d.scope is Scope.UNTRUSTED),
                allow=Allowances(team.allow) if team.allow != Allow() else None,
                on_secret=team.outbound.on_secret,
                memo=memo,
            )

    def policy(self, team: str) -> TeamPolicy:
        return self._policies.get(team) or self._policies[""]

    # -- the floor --

    async def _inspect(
        self, segments: Sequence[Segment], now: float, pace: _Pace, policy: TeamPolicy
    ) -> list[_Seen]:
        """What the floor found in each segment's text, computed once per text.

        The floor is a pure function of the text and the team's floor, so its
        results are keyed by those (the text's digest when long), and teams
        with the same floor share them. `bytes_scanned` counts each
        distinct text once, when it is first inspected. One loop for a
        request's texts: a call per segment is most of a hit's cost.

        The result is also left on the segment with this guard's token for
        the team's floor: a resent message's segments are the same objects
        (the chat walk keeps them), so the next request reads its result
        there, without the cache lookup's hashing and probing of a table
        that is cold by then. A token of another guard (after a reload) or
        floor is a miss, and the cache is asked as before.
        """
        cache = self._texts
        team_floor = policy.floor
        shared = team_floor.key
        owner = policy.memo
        out: list[_Seen] = []
        scanned = 0
        misses = 0
        for segment in segments:
            if owner is not None and segment.floor_owner is owner:
                out.append(cast(_Seen, segment.floor_seen))
                continue
            text = segment.text
            key: str | bytes | tuple[object, ...] = ""
            weight = 0
            seen = None
            if cache is not None:
                if len(text) <= _KEY_BY_VALUE_CHARS:
                    key, weight = text, len(text)
                else:
                    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
                if shared:
                    key = (shared, key)
                seen = cache.get(key, now)
            if seen is None:
                misses += 1
                scanned += len(text)
                if len(text) <= _WINDOW:
                    seen = self._floor(text, team_floor)
                    await pace.spent(len(text))
                else:
                    seen = await self._floor_windows(text, pace, team_floor)
                if cache is not None:
                    cache.put(key, seen, now, weight)
            if owner is not None:
                segment.floor_owner = owner
                segment.floor_seen = seen
            out.append(seen)
        self.bytes_scanned += scanned
        if cache is not None:
            self.text_cache_misses += misses
            self.text_cache_hits += len(segments) - misses
        return out

    def _found(self, kind: str, value: str) -> Found:
        return Found(kind, self.fingerprint(value), self._allow_patterns.matching(value))

    def _floor(self, text: str, team_floor: floor.Floor) -> _Seen:
        return _Seen(tuple(self._found(kind, value) for kind, value in team_floor.find(text)))

    async def _floor_windows(self, text: str, pace: _Pace, team_floor: floor.Floor) -> _Seen:
        """A large text, window by window, letting other requests run in between."""
        found: dict[Found, None] = {}
        for window in _windows(text):
            found.update(dict.fromkeys(self._found(k, v) for k, v in team_floor.find(window)))
            await pace.spent(len(window))
        return _Seen(tuple(found))

    async def _assess(
        self, seen: _Seen, text: str, pace: _Pace, detectors: Sequence[Detector]
    ) -> injection.InjectionAssessment:
        """The inbound detectors' assessment, once per text, a large text window by window.

        Every team has the same inbound detectors (the embedded injection
        check), so the result is kept with the text's floor results.
        """
        found = seen.injection
        if found is not None:
            return found
        parts: list[injection.InjectionAssessment] = []
        for window in (text,) if len(text) <= _WINDOW else _windows(text):
            for detector in detectors:
                result = detector.inspect(window)
                if not isinstance(result, injection.InjectionAssessment):
                    raise TypeError("a detector of scope UNTRUSTED reports an assessment")
                parts.append(result)
            await pace.spent(len(window))
        found = parts[0] if len(parts) == 1 else _most_severe(parts)
        seen.injection = found
        return found

    # -- outbound.on_secret: redact --

    def redact(
        self, payload: object, policy: TeamPolicy, upstream: str
    ) -> tuple[object, list[Evidence]]:
        """``payload`` with every finding the team does not allow replaced by a marker.

        Returns the rewritten payload and what was redacted where (kinds and
        fingerprints of the text as it was). The caller inspects the result
        again: anything the rewrite missed still denies.
        """
        team_floor, allow = policy.floor, policy.allow
        redacted: list[Evidence] = []

        def judge(text: str, path: str) -> tuple[bool, list[str]]:
            must_go, keep = False, []
            for kind, value in team_floor.find(text):
                if team_floor.action(kind) == "review":
                    continue
                found = self._found(kind, value)
                if allow is not None and allow.rule(
                    kind, found.fingerprint, found.patterns, path, upstream
                ):
                    keep.append(value)
                    continue
                must_go = True
                redacted.append(Evidence(kind, found.fingerprint, _shown_path(path)))
            return must_go, keep

        return redact_payload(payload, judge, team_floor.mark), redacted

    # -- verdicts, cached and shared in flight --

    async def _cached(
        self, key: str, produce: Callable[[], Awaitable[Verdict]], fresh: bool = False
    ) -> Verdict:
        cache = self._verdicts
        if cache is not None and not fresh:
            hit = cache.get(key)
            if hit is not None:
                self.verdict_cache_hits += 1
                return hit
            self.verdict_cache_misses += 1
        pending = self._in_flight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            verdict = await produce()
        except BaseException as exc:
            future.set_exception(exc)
            # Nobody else may be waiting; mark it retrieved so asyncio does not warn.
            future.exception()
            raise
        finally:
            self._in_flight.pop(key, None)
        future.set_result(verdict)
        # Failures are transient by nature: the next request asks again.
        if cache is not None and verdict.category != GUARD_FAILURE:
            cache[key] = verdict
        return verdict

    async def _classify(
        self,
        policy: TeamPolicy,
        direction: Direction,
        text: str,
        source: str,
        destination: str,
        fresh: bool = False,
    ) -> Verdict:
        classifier = policy.classifier
        assert classifier is not None
        key = segment_key(direction, text, policy.policy_version, classifier.pinned_model)
        rules = policy.rules.outbound if direction == "outbound" else policy.rules.inbound
        request = GuardRequest(direction, source, destination, text, policy.policy_version)
        semaphore = self._semaphores[id(classifier)]

        async def produce() -> Verdict:
            async with semaphore:
                self.classifier_calls += 1
                return await classifier.classify(request, rules)

        return await self._cached(key, produce, fresh)

    @staticmethod
    def _is_untrusted(segment: Segment, inbound: Inbound) -> bool:
        if segment.trust is _UNTRUSTED:
            # The adapters mark documents untrusted; a team may opt them out.
            return inbound.documents or not _DOCUMENT_PATH.search(segment.path)
        return inbound.model_output and segment.role == "assistant"

    async def check_text(
        self,
        text: str,
        direction: Direction,
        policy: TeamPolicy,
        source: str,
        destination: str,
        deadline: float | None = None,
    ) -> Decision:
        """One text in one direction, as `reefgate check`, `eval` and the peer path use it.

        The same path as a request's: the floor, then `judge`. Inbound text is
        untrusted, so it gets the injection check; it is not also classified
        as outgoing.
        """
        inbound = direction == "inbound"
        segment = Segment("text", "peer", text, Trust.UNTRUSTED if inbound else Trust.TRUSTED)
        inspection = await self.inspect([segment], policy, deadline=deadline)
        if inspection.floor.action == "deny":
            return inspection.floor
        return await self.judge(inspection, policy, source, destination, outbound=not inbound)

    async def check(
        self,
        segments: Sequence[Segment],
        policy: TeamPolicy,
        source: str,
        destination: str,
        deadline: float | None = None,
    ) -> Decision:
        """The decision for one request's segments: `inspect`, then `judge`."""
        inspection = await self.inspect(segments, policy, deadline=deadline)
        if inspection.floor.action == "deny":
            return inspection.floor
        return await self.judge(inspection, policy, source, destination)

    async def inspect(
        self,
        segments: Sequence[Segment],
        policy: TeamPolicy,
        upstream: str = "",
        deadline: float | None = None,
    ) -> Inspection:
        """The floor over every segment, with the team's allowances; its deny is final.

        With a ``deadline`` (``time.monotonic()`` seconds), inspection that runs
        past it raises TimeoutError; large inputs are inspected in steps that
        let other requests run in between.
        """
        pace = _Pace(deadline)
        seen = await self._inspect(segments, monotonic(), pace, policy)
        verdict, held = _floor_decision(segments, seen, policy, upstream)
        return Inspection(segments, seen, verdict, pace, held)

    async def judge(
        self,
        inspection: Inspection,
        policy: TeamPolicy,
        source: str,
        destination: str,
        *,
        approved: bool = False,
        outbound: bool = True,
    ) -> Decision:
        """The injection check and the classifier, on what the floor let through.

        ``approved``: a reviewer approved exactly this request, so it is
        classified afresh (no cached verdict) and only a deny still blocks it; a
        review verdict no longer holds it. ``outbound=False``: the text is only
        coming in (`check_text`), so the classifier does not judge it as outgoing.
        """
        segments, seen, pace = inspection.segments, inspection.seen, inspection.pace
        classifier = policy.classifier
        inbound = policy.inbound
        # Without a classifier only untrusted text (and, per team, model output)
        # is looked at again; most segments of a turn are neither.
        skip_trusted = classifier is None and not inbound.model_output
        results: list[tuple[Segment, str, Verdict, tuple[str, ...]]] = list(inspection.held)
        jobs: list[tuple[Segment, str, Awaitable[Verdict]]] = []
        # By index rather than zip: compiled, it reads a list item in place.
        for i, segment in enumerate(segments):
            if skip_trusted and segment.trust is not _UNTRUSTED:
                continue
            # Identifiers, keys, headers and the path get the floor only: the
            # model does not read them as instructions.
            if not segment.text or segment.trust is _OPAQUE:
                continue
            if self._is_untrusted(segment, inbound):
                found = await self._assess(seen[i], segment.text, pace, policy.inbound_detectors)
                if found.decision != "allow":
                    verdict = _heuristic_verdict(found, policy.policy_version)
                    results.append((segment, "inbound", verdict, found.signals))
                if classifier is not None:
                    jobs.append(
                        (
                            segment,
                            "inbound",
                            self._classify(
                                policy, "inbound", segment.text, source, destination, approved
                            ),
                        )
                    )
            if classifier is not None and outbound:
                jobs.append(
                    (
                        segment,
                        "outbound",
                        self._classify(
                            policy, "outbound", segment.text, source, destination, approved
                        ),
                    )
                )
        if jobs:
            verdicts = await asyncio.gather(*(job for _, _, job in jobs))
            results.extend(
                (segment, direction, verdict, ())
                for (segment, direction, _), verdict in zip(jobs, verdicts, strict=True)
            )
        pace.check()
        if approved:
            results = [r for r in results if r[2].decision != "review"]
        decision = _combine(results, self.fingerprint)
        allowed = inspection.floor.allowed
        return replace(decision, allowed=allowed) if allowed else decision


class Inspection:
    """A request's segments after the floor: what `judge` continues from."""

    __slots__ = ("floor", "held", "pace", "seen", "segments")

    def __init__(
        self,
        segments: Sequence[Segment],
        seen: list[_Seen],
        floor: Decision,
        pace: _Pace,
        held: tuple[tuple[Segment, str, Verdict, tuple[str, ...]], ...] = (),
    ) -> None:
        self.segments = segments
        self.seen = seen
        self.floor = floor
        self.pace = pace
        # Custom-rule findings whose decision is review: judged with the rest.
        self.held = held


class _Pace:
    """How long inspection may hold the event loop at once, and take in all.

    Detectors are synchronous: a request with megabytes of new text would
    otherwise keep every other request, /healthz included, waiting. After each
    `_YIELD_CHARS` inspected the loop gets a turn, and the deadline is checked.
    """

    __slots__ = ("_deadline", "_since")

    def __init__(self, deadline: float | None) -> None:
        self._deadline = deadline
        self._since = 0

    async def spent(self, chars: int) -> None:
        self._since += chars
        if self._since >= _YIELD_CHARS:
            self._since = 0
            self.check()
            await asyncio.sleep(0)

    def check(self) -> None:
        if self._deadline is not None and monotonic() > self._deadline:
            raise TimeoutError("inspection ran past its deadline")


def _windows(text: str) -> Iterator[str]:
    """Overlapping windows of a large text; a secret or phrase shorter than the
    overlap lies whole in at least one."""
    step = _WINDOW - _OVERLAP
    for start in range(0, max(len(text) - _OVERLAP, 1), step):
        yield text[start : start + _WINDOW]


def _most_severe(parts: Sequence[injection.InjectionAssessment]) -> injection.InjectionAssessment:
    worst = max(parts, key=lambda a: severity(a.decision))
    signals = tuple(dict.fromkeys(sig for a in parts for sig in a.signals))
    return injection.InjectionAssessment(worst.decision, worst.category, worst.reason, signals)


def _heuristic_verdict(found: injection.InjectionAssessment, policy_version: str) -> Verdict:
    return Verdict(found.decision, found.category, found.reason, HEURISTIC_MODEL, policy_version)


def _floor_decision(
    segments: Sequence[Segment], seen: list[_Seen], policy: TeamPolicy, upstream: str
) -> tuple[Decision, tuple[tuple[Segment, str, Verdict, tuple[str, ...]], ...]]:
    """The floor's decision, and the findings that hold a request for review instead.

    A finding is let through when the segment expects its kind (the agent's own
    key in the upstream's credential header) or a team allowance names it;
    allowed findings are kept on the decision for the audit.
    """
    evidence: list[Evidence] = []
    allowed: list[Allowance] = []
    held: list[tuple[Segment, str, Verdict, tuple[str, ...]]] = []
    allow = policy.allow
    team_floor = policy.floor
    # Most texts have no finding: their segment is not even read.
    for i, info in enumerate(seen):
        if not info.findings:
            continue
        segment = segments[i]
        where = ""
        for found in info.findings:
            kind = found.kind
            if kind in segment.expected:
                continue
            where = where or _safe_where(segment)
            if allow is not None:
                rule = allow.rule(kind, found.fingerprint, found.patterns, segment.path, upstream)
                if rule is not None:
                    allowed.append(Allowance(kind, found.fingerprint, where, rule))
                    continue
            if team_floor.action(kind) == "review":
                reason = f"custom rule {kind} matched"
                verdict = Verdict("review", kind, reason, CUSTOM_MODEL, policy.policy_version)
                held.append((segment, "outbound", verdict, (kind,)))
                continue
            evidence.append(Evidence(kind, found.fingerprint, where))
    if not evidence:
        return (
            Decision("allow", "none", "no finding", allowed=tuple(allowed)) if allowed else ALLOW
        ), tuple(held)
    kinds = sorted({e.kind for e in evidence})
    reason = f"{', '.join(kinds)} found in {evidence[0].where}"
    if len(evidence) > 1:
        reason += f" and {len(evidence) - 1} more place(s)"
    return Decision("deny", "secret", reason, tuple(evidence), allowed=tuple(allowed)), tuple(held)


def _combine(
    results: list[tuple[Segment, str, Verdict, tuple[str, ...]]], fingerprint: Fingerprinter
) -> Decision:
    worst: tuple[Segment, str, Verdict] | None = None
    evidence: list[Evidence] = []
    for segment, direction, verdict, signals in results:
        if verdict.decision == "allow":
            continue
        where = _safe_where(segment)
        kinds = signals or (_shown_category(verdict.category),)
        fp = fingerprint(segment.text)
        evidence.extend(Evidence(f"{direction}:{kind}", fp, where) for kind in kinds)
        if worst is None or severity(verdict.decision) > severity(worst[2].decision):
            worst = (segment, direction, verdict)
    if worst is None:
        return ALLOW
    segment, direction, verdict = worst
    reason = f"{direction} check: {verdict.reason} ({_safe_where(segment)})"
    category = _shown_category(verdict.category)
    return Decision(verdict.decision, category, reason, tuple(evidence), excerpt(segment.text))


_EXCERPT_CHARS: Final = 280


def excerpt(text: str) -> str:
    """The start of ``text`` as a reviewer may see it: whitespace collapsed, secrets replaced."""
    short = " ".join(text[: _EXCERPT_CHARS * 2].split())[:_EXCERPT_CHARS]
    if len(text) > _EXCERPT_CHARS:
        short += "…"
    try:
        found = floor.find(short)
    except Exception:
        return floor.REDACTED
    for kind, value in found:
        if value not in short:
            # Found only once unwrapped: the wrapping is the secret's spelling.
            return floor.REDACTED
        short = short.replace(value, f"[{kind}]")
    return short


_CATEGORY_OTHER: Final = re.compile(r"[^A-Za-z0-9_.:-]+")


def _shown_category(category: str) -> str:
    """A classifier's category as the gateway repeats it: a header, an error code,
    an audit field and a metrics label.

    The verdict admits any text of 1..128 characters, and a classifier steered
    by the text it judges could put a line break (a broken header) or a value
    from the request there; only a plain token is repeated as it is.
    """
    if floor.holds_secret(category):
        return floor.REDACTED
    return _CATEGORY_OTHER.sub("_", category)
