"""verdicts.json: the gateway's classifier adapters and admission, on the recorded responses.

The real `Classifier` runs (timeout, size bound, failure handling) with a
stand-in for the HTTP session that answers with the case's recorded provider
response, so no socket is opened.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, cast

import aiohttp

from gateway.guard.classifiers.client import Classifier
from gateway.guard.classifiers.providers import AnthropicMessages, OpenAIResponses, Provider, build
from gateway.guard.verdict import GuardRequest, admit
from gateway.peer.conformance.harness import (
    Case,
    CaseResult,
    Mismatch,
    Relaxed,
    dig,
    equal,
    run_cases,
    unknown,
)

T = TypeVar("T")

_BASES = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}


def run(data: Mapping[str, Any]) -> tuple[CaseResult, ...]:
    cases: Sequence[Case] = data["cases"]
    api_key = str(data.get("api_key_used", "test-api-key"))
    verdicts = _in_new_loop(_classify_all(cases, api_key))

    def check(case: Case) -> Relaxed | None:
        expect = case.get("expect")
        if case.get("kind") == "admitVerdict":
            got = admit(case["raw"], case["pinned_model"], case["policy_version"])
            equal("verdict", got.as_dict(), case["verdict"])
        elif expect == "construction_error":
            if not isinstance(verdicts[case["id"]], ValueError):
                raise Mismatch("the adapter accepted a model the reference refused")
        elif expect in ("admitted", "guard_failure"):
            _request_shape(case, api_key)
            got_verdict = verdicts[case["id"]]
            if isinstance(got_verdict, Exception):
                raise Mismatch(f"classification raised {type(got_verdict).__name__}")
            equal("verdict", got_verdict, case["verdict"])
        else:
            raise unknown(case)
        return None

    return run_cases(cases, check)


def _provider(case: Case, api_key: str) -> Provider:
    cls = OpenAIResponses if case["provider"] == "openai" else AnthropicMessages
    return cls(_BASES[case["provider"]], case["pinned_model"], api_key)


def _guard_request(case: Case) -> GuardRequest:
    req = dig(case, "guard_request")
    return GuardRequest(
        req["direction"], req["source"], req["destination"], req["text"], req["policyVersion"]
    )


def _request_shape(case: Case, api_key: str) -> None:
    """What the adapter sends: the reference's endpoint, headers and input.

    The instructions and schema name are reefgate's own; the untrusted request
    must travel in the input, never in the instructions.
    """
    built = build(_provider(case, api_key), _guard_request(case), None)
    expected = dig(case, "provider_request")
    equal("url", built.url, expected["url"])
    for name, value in expected["headers"].items():
        equal(f"header {name}", built.headers.get(name), value)
    body = json.loads(built.body)
    ref = expected["body_json"]
    equal("body keys", sorted(body), sorted(ref))
    if case["provider"] == "openai":
        equal("input", body["input"], ref["input"])
        equal("schema", body["text"]["format"]["schema"], ref["text"]["format"]["schema"])
        instructions = body["instructions"]
    else:
        equal("messages", body["messages"], ref["messages"])
        equal("output_config", body["output_config"], ref["output_config"])
        instructions = body["system"]
    if case["guard_request"]["text"] and case["guard_request"]["text"] in instructions:
        raise Mismatch("the untrusted text is in the instructions")


async def _classify_all(cases: Sequence[Case], api_key: str) -> dict[str, object]:
    out: dict[str, object] = {}
    # The classifier logs every failure; here failures are the point.
    logger = logging.getLogger("reefgate.guard")
    disabled, logger.disabled = logger.disabled, True
    try:
        for case in cases:
            if "provider" not in case or case.get("kind") == "admitVerdict":
                continue
            try:
                session = cast(aiohttp.ClientSession, _RecordedSession(case["provider_response"]))
                classifier = Classifier(_provider(case, api_key), session, case["timeout_ms"])
                verdict = await classifier.classify(_guard_request(case), None)
            except Exception as exc:
                out[case["id"]] = exc
            else:
                out[case["id"]] = verdict.as_dict()
    finally:
        logger.disabled = disabled
    return out


def _in_new_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion, also when called from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(coro))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, name="reefgate-conformance")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


# ---------------------------------------------------------------------------
# A ClientSession stand-in: just what `gateway.guard.classifiers.client.post` uses.


def _body(response: Mapping[str, Any]) -> bytes:
    if "body_text" in response:
        return str(response["body_text"]).encode("utf-8")
    recipe = response["body_text_recipe"]
    text = recipe["prefix"] + recipe["pad_char"] * recipe["pad_count"] + recipe["suffix"]
    return str(text).encode("utf-8")


class _RecordedSession:
    def __init__(self, response: Mapping[str, Any]) -> None:
        self._response = response

    def post(self, url: str, **_kwargs: object) -> _RecordedResponse:
        return _RecordedResponse(self._response)


class _Content:
    def __init__(self, response: Mapping[str, Any]) -> None:
        self._response = response

    async def iter_any(self) -> AsyncIterator[bytes]:
        behavior = self._response.get("behavior")
        if behavior == "never_resolves":
            await asyncio.Event().wait()
        if behavior == "fetch_throws":
            raise aiohttp.ClientConnectionError(str(self._response.get("error", "fetch failed")))
        yield _body(self._response)


class _RecordedResponse:
    def __init__(self, response: Mapping[str, Any]) -> None:
        self.status = int(response.get("status", 200))
        self.headers: dict[str, str] = {"Content-Type": "application/json"}
        self.content = _Content(response)

    async def __aenter__(self) -> _RecordedResponse:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None
