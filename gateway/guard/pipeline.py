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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _encode_str

import aiohttp
from cachetools import TTLCache

from gateway.canonical import digest
from gateway.config.models import Classifier as ClassifierSettings
from gateway.config.models import GatewayConfig, Inbound, Rules, Team
from gateway.guard import floor
from gateway.guard.cache import TextCache
from gateway.guard.cache import now as monotonic
from gateway.guard.classifiers.client import Classifier
from gateway.guard.classifiers.providers import (
    AnthropicMessages,
    OpenAICompatibleChat,
    OpenAIResponses,
    Provider,
)
from gateway.guard.decision import ALLOW, Decision, Evidence, severity
from gateway.guard.detectors import injection, secrets
from gateway.guard.findings import Fingerprinter
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
# Texts up to this long are their own cache key; longer ones are keyed by digest.
_KEY_BY_VALUE_CHARS = 256

# The identity of the embedded injection detector in cache keys and verdicts.
HEURISTIC_MODEL = "reefgate-heuristics-1"

# A path component that could itself carry data (an object key chosen by the
# client) is not echoed back; identifiers and indexes are.
_SAFE_PATH = re.compile(r"^[\w.\[\]\- ():,]{0,200}$")

_DOCUMENT_PATH = re.compile(r"document|input_file|\.file\b|search_result")


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
_SHOWN_ROLES = frozenset(
    {"system", "developer", "user", "assistant", "tool", "function", "request", "unknown"}
    | {"path", "query", "field", "file", "header", "body", "peer"}
)


def _safe_where(segment: Segment) -> str:
    where = segment.where()
    if _SAFE_PATH.match(where) and not secrets.scan(where):
        return where
    parts = [f"role {segment.role}"] if segment.role in _SHOWN_ROLES else []
    if segment.index is not None:
        parts.append(f"message {segment.index}")
    return ", ".join(parts) or "a field of the request"


@dataclass(slots=True)
class _Seen:
    # (kind, fingerprint) of each secret the floor found.
    findings: tuple[tuple[str, str], ...]
    injection: injection.InjectionAssessment | None = None


@dataclass(frozen=True, slots=True)
class TeamPolicy:
    name: str
    policy_version: str
    rules: Rules
    inbound: Inbound
    classifier: Classifier | None


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
        self._texts: TextCache[str | bytes, _Seen] | None = (
            TextCache(cache.size, cache.ttl_s) if cache.size else None
        )
        self._verdicts: TTLCache[str, Verdict] | None = (
            TTLCache(maxsize=cache.size, ttl=cache.ttl_s) if cache.size else None
        )
        self._in_flight: dict[str, asyncio.Future[Verdict]] = {}
        self._policies: dict[str, TeamPolicy] = {}
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self.bind(None)
        # Counters the benchmarks read: detector input and classifier calls.
        self.bytes_scanned = 0
        self.classifier_calls = 0

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
            self._policies[name] = TeamPolicy(
                name=name,
                policy_version=effective_policy_version(
                    base.policy_version, rules.outbound, rules.inbound
                ),
                rules=rules,
                inbound=team.inbound,
                classifier=classifiers[settings],
            )

    def policy(self, team: str) -> TeamPolicy:
        return self._policies.get(team) or self._policies[""]

    # -- the floor --

    def _inspect(self, texts: Iterable[str], now: float) -> list[_Seen]:
        """What the deterministic detectors found in each text, computed once per text.

        Both detectors are pure functions of the text, so their results are
        keyed by the text alone (its digest when long). `bytes_scanned`
        counts each distinct text once, when it is first inspected. One loop
        for a request's texts: a call per segment is most of a hit's cost.
        """
        cache = self._texts
        out: list[_Seen] = []
        scanned = 0
        if cache is None:
            for text in texts:
                scanned += len(text)
                out.append(self._floor(text))
            self.bytes_scanned += scanned
            return out
        get, put, sha256 = cache.get, cache.put, hashlib.sha256
        for text in texts:
            # Short texts key themselves: a str hash and compare cost less than
            # encoding and hashing, and they bound what an entry holds.
            key: str | bytes = (
                text
                if len(text) <= _KEY_BY_VALUE_CHARS
                else sha256(text.encode("utf-8", "surrogatepass")).digest()
            )
            seen = get(key, now)
            if seen is None:
                scanned += len(text)
                seen = self._floor(text)
                put(key, seen, now)
            out.append(seen)
        self.bytes_scanned += scanned
        return out

    def _floor(self, text: str) -> _Seen:
        fp = self.fingerprint
        return _Seen(tuple((kind, fp(value)) for kind, value in floor.find(text)))

    # -- verdicts, cached and shared in flight --

    async def _cached(self, key: str, produce: Callable[[], Awaitable[Verdict]]) -> Verdict:
        cache = self._verdicts
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                return hit
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

    @staticmethod
    def _assessed(seen: _Seen, text: str) -> injection.InjectionAssessment:
        """The embedded injection detector, once per text; synchronous, so no
        in-flight sharing is needed."""
        found = seen.injection
        if found is None:
            found = seen.injection = injection.assess(text)
        return found

    @classmethod
    def _heuristic(
        cls, seen: _Seen, text: str, policy_version: str
    ) -> tuple[Verdict, tuple[str, ...]]:
        found = cls._assessed(seen, text)
        return _heuristic_verdict(found, policy_version), found.signals

    async def _classify(
        self, policy: TeamPolicy, direction: Direction, text: str, source: str, destination: str
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

        return await self._cached(key, produce)

    @staticmethod
    def _is_untrusted(segment: Segment, inbound: Inbound) -> bool:
        if segment.trust is Trust.UNTRUSTED:
            # The adapters mark documents untrusted; a team may opt them out.
            return inbound.documents or not _DOCUMENT_PATH.search(segment.path)
        return inbound.model_output and segment.role == "assistant"

    async def check_text(
        self, text: str, direction: Direction, policy: TeamPolicy, source: str, destination: str
    ) -> Decision:
        """One text in one direction, as `reefgate check` and the peer path use it."""
        segment = Segment(
            "text", "peer", text, Trust.UNTRUSTED if direction == "inbound" else Trust.TRUSTED
        )
        (seen,) = self._inspect([text], monotonic())
        floor_decision = _floor_decision([(segment, seen)])
        if floor_decision.action == "deny":
            return floor_decision
        jobs: list[Awaitable[tuple[Verdict, tuple[str, ...]]]] = []
        if direction == "inbound":
            jobs.append(_ready(self._heuristic(seen, text, policy.policy_version)))
        if policy.classifier is not None:
            jobs.append(_no_signals(self._classify(policy, direction, text, source, destination)))
        results = await asyncio.gather(*jobs)
        return _combine(
            [(segment, direction, verdict, signals) for verdict, signals in results],
            self.fingerprint,
        )

    async def check(
        self, segments: Sequence[Segment], policy: TeamPolicy, source: str, destination: str
    ) -> Decision:
        seen = self._inspect([segment.text for segment in segments], monotonic())
        floor_decision = _floor_decision(zip(segments, seen, strict=True))
        if floor_decision.action == "deny":
            return floor_decision
        classifier = policy.classifier
        inbound = policy.inbound
        # Without a classifier only untrusted text (and, per team, model output)
        # is looked at again; most segments of a turn are neither.
        skip_trusted = classifier is None and not inbound.model_output
        results: list[tuple[Segment, str, Verdict, tuple[str, ...]]] = []
        jobs: list[tuple[Segment, str, Awaitable[Verdict]]] = []
        for segment, info in zip(segments, seen, strict=True):
            if skip_trusted and segment.trust is not Trust.UNTRUSTED:
                continue
            # Identifiers, keys, headers and the path get the floor only: the
            # model does not read them as instructions.
            if not segment.text or segment.trust is Trust.OPAQUE:
                continue
            if self._is_untrusted(segment, inbound):
                found = self._assessed(info, segment.text)
                if found.decision != "allow":
                    verdict = _heuristic_verdict(found, policy.policy_version)
                    results.append((segment, "inbound", verdict, found.signals))
                if classifier is not None:
                    jobs.append(
                        (
                            segment,
                            "inbound",
                            self._classify(policy, "inbound", segment.text, source, destination),
                        )
                    )
            if classifier is not None:
                jobs.append(
                    (
                        segment,
                        "outbound",
                        self._classify(policy, "outbound", segment.text, source, destination),
                    )
                )
        if jobs:
            verdicts = await asyncio.gather(*(job for _, _, job in jobs))
            results.extend(
                (segment, direction, verdict, ())
                for (segment, direction, _), verdict in zip(jobs, verdicts, strict=True)
            )
        return _combine(results, self.fingerprint)


def _heuristic_verdict(found: injection.InjectionAssessment, policy_version: str) -> Verdict:
    return Verdict(found.decision, found.category, found.reason, HEURISTIC_MODEL, policy_version)


def _floor_decision(seen: Iterable[tuple[Segment, _Seen]]) -> Decision:
    evidence: list[Evidence] = []
    for segment, info in seen:
        if info.findings:
            where = _safe_where(segment)
            evidence.extend(Evidence(kind, fp, where) for kind, fp in info.findings)
    if not evidence:
        return ALLOW
    kinds = sorted({e.kind for e in evidence})
    reason = f"{', '.join(kinds)} found in {evidence[0].where}"
    if len(evidence) > 1:
        reason += f" and {len(evidence) - 1} more place(s)"
    return Decision("deny", "secret", reason, tuple(evidence))


async def _ready(result: tuple[Verdict, tuple[str, ...]]) -> tuple[Verdict, tuple[str, ...]]:
    return result


async def _no_signals(pending: Awaitable[Verdict]) -> tuple[Verdict, tuple[str, ...]]:
    return await pending, ()


def _combine(
    results: list[tuple[Segment, str, Verdict, tuple[str, ...]]], fingerprint: Fingerprinter
) -> Decision:
    worst: tuple[Segment, str, Verdict] | None = None
    evidence: list[Evidence] = []
    for segment, direction, verdict, signals in results:
        if verdict.decision == "allow":
            continue
        where = _safe_where(segment)
        kinds = signals or (verdict.category,)
        fp = fingerprint(segment.text)
        evidence.extend(Evidence(f"{direction}:{kind}", fp, where) for kind in kinds)
        if worst is None or severity(verdict.decision) > severity(worst[2].decision):
            worst = (segment, direction, verdict)
    if worst is None:
        return ALLOW
    segment, direction, verdict = worst
    reason = f"{direction} check: {verdict.reason} ({_safe_where(segment)})"
    return Decision(verdict.decision, verdict.category, reason, tuple(evidence))
