"""The classifier's I/O: one POST through the shared session, bounded in time and size.

Every failure, whatever its cause, comes back as a guard_failure verdict.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp

from gateway.guard.classifiers.providers import Provider, ProviderRequest, build, read
from gateway.guard.verdict import (
    MAX_RESPONSE_CHARS,
    AdmissionError,
    GuardRequest,
    Verdict,
    admit,
    assert_pinned_model,
    guard_failure,
)
from gateway.observe.logs import log_failure

log = logging.getLogger("reefgate.guard")

# A UTF-16 code unit is at most 3 UTF-8 bytes, so this many bytes always
# holds a response the size check would accept.
_MAX_RESPONSE_BYTES = 3 * MAX_RESPONSE_CHARS


class Classifier:
    def __init__(self, provider: Provider, session: aiohttp.ClientSession, timeout_ms: int) -> None:
        assert_pinned_model(provider.pinned_model)
        if timeout_ms <= 0:
            raise ValueError("classifier timeout must be positive")
        self.provider = provider
        self.pinned_model = provider.pinned_model
        self._session = session
        self._timeout = timeout_ms / 1000

    async def classify(self, request: GuardRequest, rules: str | None) -> Verdict:
        try:
            async with asyncio.timeout(self._timeout):
                raw = await self._call(request, rules)
        except (AdmissionError, aiohttp.ClientError, TimeoutError, UnicodeDecodeError) as exc:
            log.warning("classifier %s failed: %s", self.provider.name, type(exc).__name__)
            return guard_failure(self.pinned_model, request.policy_version)
        except Exception as exc:
            # Fail closed on anything unexpected too; it is logged (without its
            # message, which may quote the request), never passed.
            log_failure(log, f"classifier {self.provider.name}", exc)
            return guard_failure(self.pinned_model, request.policy_version)
        return admit(raw, self.pinned_model, request.policy_version)

    async def _call(self, request: GuardRequest, rules: str | None) -> dict[str, object]:
        status, body = await post(self._session, build(self.provider, request, rules))
        return read(self.provider, status, body)


async def post(session: aiohttp.ClientSession, built: ProviderRequest) -> tuple[int, str]:
    """One classification request: its status and body text, bounded in size.

    Raises AdmissionError, UnicodeDecodeError or aiohttp's errors; callers
    fail closed on all of them.
    """
    async with session.post(
        built.url, data=built.body, headers=built.headers, allow_redirects=False
    ) as resp:
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.content.iter_any():
            size += len(chunk)
            if size > _MAX_RESPONSE_BYTES:
                raise AdmissionError("provider response too large")
            chunks.append(chunk)
        body = b"".join(chunks)
        encoding = resp.headers.get("Content-Encoding", "identity").lower()
        if encoding not in ("identity", ""):
            raise AdmissionError("compressed provider response")
        return resp.status, body.decode("utf-8")
