"""The exception tree.

    ReefgateError
    ├── ConfigError          config cannot be loaded; carries every issue found
    ├── RequestError         the client's request is unusable; maps to a status
    │   ├── BadRequest       400: invalid JSON, UTF-8, shape, nesting
    │   ├── Unauthorized     401: no team matches and none is default
    │   ├── NotFound         404: unknown upstream prefix
    │   ├── RequestTimeout   408: the client stopped sending its body
    │   ├── TooLarge         413: body over limits.max_body_bytes
    │   └── UnsupportedMedia 415: a body the gateway cannot inspect
    ├── Refused              a deny or review decision; 403 with the decision's category
    ├── Held                 held for a reviewer; 403 review_pending with the review's id
    ├── UpstreamError        the upstream failed; maps to 502 / 504
    └── GuardFailure         the guard itself failed; always a deny, category guard_failure

Errors from libraries are converted at the boundary (`raise ... from exc`),
so handlers deal only with these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from gateway.config.loader import ConfigIssue
    from gateway.guard.decision import Decision


class ReefgateError(Exception):
    pass


class ConfigError(ReefgateError):
    def __init__(self, issues: Sequence[ConfigIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


class RequestError(ReefgateError):
    status: ClassVar[int] = 400
    code: ClassVar[str] = "bad_request"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code  # type: ignore[misc]


class BadRequest(RequestError):
    status = 400
    code = "invalid_request"


class Unauthorized(RequestError):
    status = 401
    code = "unknown_team"


class NotFound(RequestError):
    status = 404
    code = "unknown_upstream"


class RequestTimeout(RequestError):
    status = 408
    code = "request_timeout"


class TooLarge(RequestError):
    status = 413
    code = "request_too_large"


class UnsupportedMedia(RequestError):
    status = 415
    code = "unsupported_media_type"


class Refused(ReefgateError):
    """The request is not forwarded: the guard's deny or review, or the gateway's own refusal."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.category)
        self.decision = decision


class Held(ReefgateError):
    """The request waits for a reviewer: not forwarded now, and not refused for good."""

    def __init__(self, review_id: str, reason: str) -> None:
        super().__init__(reason)
        self.review_id = review_id
        self.reason = reason


class UpstreamError(ReefgateError):
    def __init__(
        self, message: str, *, status: int = 502, code: str = "upstream_unreachable"
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


class GuardFailure(ReefgateError):
    """Raised inside the guard path; the pipeline turns it into a deny."""
