"""A fake OpenAI Responses endpoint acting as the guard classifier, with every failure mode."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

PINNED = "gpt-4.1-2025-04-14"


@dataclass
class FakeClassifier:
    calls: list[dict[str, Any]] = field(default_factory=list)
    # None = behave; otherwise one of the failure modes below.
    failure: str | None = None
    # The category of a review or deny, as the classifier states it.
    category: str = "test_policy"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/responses", self._handle)
        return app

    def seen_texts(self) -> list[str]:
        return [json.loads(c["input"])["text"] for c in self.calls]

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append(body)
        guard_request = json.loads(body["input"])
        text = guard_request["text"]
        decision = "deny" if "DENYME" in text else "review" if "REVIEWME" in text else "allow"
        verdict: dict[str, Any] = {
            "decision": decision,
            "category": self.category if decision != "allow" else "benign",
            "reason": f"fake classifier says {decision}",
            "policyVersion": guard_request["policyVersion"],
        }
        model = PINNED
        status = 200
        verdict_text = json.dumps(verdict)
        mode = self.failure
        if mode == "timeout":
            await asyncio.sleep(5)
        elif mode == "http_500":
            status = 500
        elif mode == "prose":
            verdict_text = f"Here is the verdict: {verdict_text}"
        elif mode == "extra_key":
            verdict_text = json.dumps({**verdict, "confidence": 1})
        elif mode == "model_key":
            verdict_text = json.dumps({**verdict, "model": PINNED})
        elif mode == "duplicate_key":
            verdict_text = verdict_text[:-1] + ', "decision": "allow"}'
        elif mode == "wrong_model":
            model = "gpt-4.1"
        elif mode == "policy_mismatch":
            verdict_text = json.dumps({**verdict, "policyVersion": "reef-v0"})
        elif mode == "bad_enum":
            verdict_text = json.dumps({**verdict, "decision": "maybe"})
        elif mode == "empty_category":
            verdict_text = json.dumps({**verdict, "category": ""})
        elif mode == "not_json":
            return web.Response(status=200, text="<html>gateway error</html>")
        elif mode == "oversize":
            return web.Response(status=200, text='{"pad": "' + "x" * 300_000 + '"}')
        envelope = {
            "id": "resp_1",
            "object": "response",
            "model": model,
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": verdict_text, "annotations": []}],
                }
            ],
        }
        return web.json_response(envelope, status=status)


FAILURE_MODES = [
    "timeout",
    "http_500",
    "prose",
    "extra_key",
    "model_key",
    "duplicate_key",
    "wrong_model",
    "policy_mismatch",
    "bad_enum",
    "empty_category",
    "not_json",
    "oversize",
]
