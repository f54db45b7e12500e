"""The reviewers' listener: the admin API and the reviewer page, never on the agents' port.

Auth is a bearer token. The admin token (``admin.token_env``) sees and decides
every team's reviews; a team's reviewer tokens (``reviewers.tokens_env``) see
and decide that team's only. A decision is recorded as made by ``admin`` or by
``<team>:<env var name>``, never by the token itself, and is written to the
audit chain.

API (JSON; errors are ``{"error": {"code": ..., "message": ...}}``)::

    GET  /admin/reviews?status=pending|approved|denied[&team=T]   newest first
    GET  /admin/reviews/{id}
    POST /admin/reviews/{id}/approve    optional body {"note": "..."}
    POST /admin/reviews/{id}/deny       optional body {"note": "..."}

401 without a known token, 403 for another team's review, 404 for an unknown
one, 409 when it is already decided, 503 when the store or the audit log
cannot be used.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from aiohttp import web

from gateway.config.loader import LoadedConfig
from gateway.observe.audit import AuditLog, AuditLogError
from gateway.observe.logs import log_failure
from gateway.review import page
from gateway.review.gate import Reviews
from gateway.review.model import STATUSES, Review, Status
from gateway.review.store import AlreadyDecided, NotFound, StoreError

__all__ = ["ADMIN", "AdminState", "Reviewer", "Tokens", "make_admin_app", "tokens_configured"]

log = logging.getLogger("reefgate.admin")

# Review ids are "rv_" and 32 hex digits; anything far from that shape is
# answered 404 without asking the stores.
_REVIEW_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# A note explains a decision in a sentence or two; it is stored with the review.
MAX_NOTE_CHARS = 2000
# Bodies here are at most a note: anything larger is not a reviewer's request.
_MAX_BODY = 16 * 1024

_STATUS: dict[str, Status] = {s: s for s in STATUSES}
_JSON_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


@dataclass(frozen=True, slots=True)
class Reviewer:
    """Who a token belongs to: the admin, or reviewers of one or more teams."""

    admin: bool = False
    # team -> the env var naming this token in that team's reviewers.tokens_env
    # (one env var may be listed by several teams: one reviewer for each).
    teams: Mapping[str, str] = field(default_factory=dict)

    def may_see(self, team: str) -> bool:
        return self.admin or team in self.teams

    def name_for(self, team: str) -> str:
        """The `decided_by` of a decision on a review of `team` (which it may see)."""
        return "admin" if self.admin else f"{team}:{self.teams[team]}"


def _digest(token: str) -> bytes:
    # Comparing fixed-length digests keeps a token's length out of the timing
    # as well as its content. surrogateescape: a header (or env var) that is
    # not UTF-8 arrives with its bytes escaped, and is compared as those bytes.
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


class Tokens:
    """Every configured token, compared in constant time against each request's."""

    def __init__(self, config: LoadedConfig) -> None:
        self._entries = self._load(config)

    def update(self, config: LoadedConfig) -> None:
        """Take `config`'s tokens (a config reload); a request checks one set or the other."""
        self._entries = self._load(config)

    @staticmethod
    def _load(config: LoadedConfig) -> list[tuple[bytes, Reviewer]]:
        by_value: dict[str, Reviewer] = {}
        admin_env = config.gateway.admin.token_env
        admin_value = config.env.get(admin_env, "") if admin_env else ""
        if admin_value:
            by_value[admin_value] = Reviewer(admin=True)
        for team_name, team in sorted(config.teams.items()):
            for var in team.reviewers.tokens_env:
                value = config.env.get(var, "")
                if not value:
                    continue  # the loader refuses this; a hand-made config may not
                known = by_value.get(value, Reviewer())
                if not known.admin and team_name not in known.teams:
                    by_value[value] = Reviewer(teams={**known.teams, team_name: var})
        return [(_digest(value), who) for value, who in by_value.items()]

    def __bool__(self) -> bool:
        return bool(self._entries)

    def identify(self, authorization: str | None) -> Reviewer | None:
        """The reviewer holding the bearer token of an Authorization header, if any."""
        if authorization is None:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        candidate = _digest(token)
        found: Reviewer | None = None
        # Every entry is compared, whatever matched before: the time taken does
        # not tell which token (or whether the admin's) was close.
        for value, who in self._entries:
            if hmac.compare_digest(value, candidate):
                found = who
        return found


def tokens_configured(config: LoadedConfig) -> bool:
    """Whether any token could open the admin API (else its listener has no use)."""
    return bool(Tokens(config))


@dataclass(frozen=True, slots=True)
class AdminState:
    reviews: Reviews
    audit: AuditLog
    tokens: Tokens


ADMIN = web.AppKey("admin", AdminState)
_REVIEWER = web.RequestKey("reviewer", Reviewer)


class _Failure(Exception):
    """An answer in the admin API's error shape."""

    def __init__(
        self, status: int, code: str, message: str, extra: Mapping[str, object] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra or {}


def _error(
    status: int, code: str, message: str, extra: Mapping[str, object] | None = None
) -> web.Response:
    body: dict[str, object] = {"error": {"code": code, "message": message, **(extra or {})}}
    response = web.json_response(body, status=status, headers=_JSON_HEADERS)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="reefgate admin"'
    return response


def _json(data: object) -> web.Response:
    return web.json_response(data, headers=_JSON_HEADERS)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except _Failure as exc:
        return _error(exc.status, exc.code, exc.message, exc.extra)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(exc.status, _HTTP_CODES.get(exc.status, "http_error"), exc.reason)
    except StoreError as exc:
        # The stores' messages may name a database URL with its password.
        log_failure(log, "review store", exc)
        return _error(503, "store_unavailable", "the review store cannot be used")
    except Exception as exc:
        # A bug: logged by type and place only, as the proxy does.
        log_failure(log, "admin request", exc)
        return _error(500, "internal_error", "reefgate failed")


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}


@web.middleware
async def _auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith("/admin/"):
        return await handler(request)  # the page and its assets hold no data
    reviewer = request.app[ADMIN].tokens.identify(request.headers.get("Authorization"))
    if reviewer is None:
        raise _Failure(401, "unauthorized", "a valid bearer token is required")
    request[_REVIEWER] = reviewer
    return await handler(request)


def _reviewer(request: web.Request) -> Reviewer:
    return request[_REVIEWER]


def _forbidden(team: str) -> _Failure:
    return _Failure(403, "forbidden", f"this token may not see team {team}'s reviews")


async def _list(request: web.Request) -> web.Response:
    reviewer = _reviewer(request)
    status_arg = request.query.get("status") or None
    status = _STATUS.get(status_arg) if status_arg is not None else None
    if status_arg is not None and status is None:
        raise _Failure(400, "invalid_request", "status must be pending, approved or denied")
    team = request.query.get("team") or None
    reviews = request.app[ADMIN].reviews
    if team is not None:
        if not reviewer.may_see(team):
            raise _forbidden(team)
        found = await reviews.list(team=team, status=status)
    elif reviewer.admin:
        found = await reviews.list(status=status)
    else:
        found = []
        for name in sorted(reviewer.teams):
            found.extend(await reviews.list(team=name, status=status))
        found.sort(key=lambda r: r.created, reverse=True)
    return _json([r.as_json() for r in found])


async def _visible(request: web.Request) -> Review:
    """The review named in the path, if this reviewer may see it."""
    review_id = request.match_info["id"]
    if not _REVIEW_ID.match(review_id):
        raise _Failure(404, "not_found", "no such review")
    try:
        _, review = await request.app[ADMIN].reviews.get(review_id)
    except NotFound as exc:
        raise _Failure(404, "not_found", "no such review") from exc
    if not _reviewer(request).may_see(review.team):
        raise _forbidden(review.team)
    return review


async def _show(request: web.Request) -> web.Response:
    return _json((await _visible(request)).as_json())


async def _note(request: web.Request) -> str | None:
    raw = await request.read()
    if not raw.strip():
        return None
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Failure(400, "invalid_request", "the body must be JSON") from exc
    if not isinstance(body, dict) or set(body) - {"note"}:
        raise _Failure(400, "invalid_request", 'the body must be {"note": "..."}')
    note = body.get("note")
    if note is None:
        return None
    if not isinstance(note, str):
        raise _Failure(400, "invalid_request", "note must be a string")
    if len(note) > MAX_NOTE_CHARS:
        raise _Failure(400, "invalid_request", f"note is longer than {MAX_NOTE_CHARS} characters")
    return note or None


def _decide(approve: bool) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        note = await _note(request)
        review = await _visible(request)
        state = request.app[ADMIN]
        # An unaudited decision is not made: the same rule as for the proxy.
        if state.audit.failed is not None:
            raise _Failure(503, "audit_unavailable", "the audit log cannot be written")
        decided_by = _reviewer(request).name_for(review.team)
        try:
            decided = await state.reviews.decide(
                review.id, approve=approve, reviewer=decided_by, note=note
            )
        except AlreadyDecided as exc:
            raise _Failure(
                409,
                "already_decided",
                f"review {review.id} is already {exc.review.status}",
                {"status": exc.review.status, "decided_by": exc.review.decided_by},
            ) from exc
        except NotFound as exc:
            raise _Failure(404, "not_found", "no such review") from exc
        try:
            state.audit.append(
                "review_decision",
                {
                    "review_id": decided.id,
                    "team": decided.team,
                    "digest": decided.digest,
                    "decision": decided.status,
                    "decided_by": decided_by,
                    # The note is free text a reviewer may paste anything into,
                    # and the chain is exported unencrypted: its size only. The
                    # text itself stays with the review in the store.
                    "note_chars": len(note or ""),
                },
            )
        except (AuditLogError, ValueError) as exc:
            log_failure(log, "audit of a review decision", exc, decided.id)
            raise _Failure(
                503,
                "audit_unavailable",
                f"review {decided.id} is {decided.status}, but the audit log could not record it",
            ) from exc
        log.info("review %s %s by %s", decided.id, decided.status, decided_by)
        return _json(decided.as_json())

    return handler


def make_admin_app(config: LoadedConfig, reviews: Reviews, audit: AuditLog) -> web.Application:
    """The admin listener's app: API under /admin/, the reviewer page at /.

    `reviews` and `audit` are the main app's, already opened: the audit log
    has a single writer.
    """
    app = web.Application(client_max_size=_MAX_BODY, middlewares=[_errors, _auth])
    app[ADMIN] = AdminState(reviews=reviews, audit=audit, tokens=Tokens(config))
    app.router.add_get("/admin/reviews", _list)
    app.router.add_get("/admin/reviews/{id}", _show)
    app.router.add_post("/admin/reviews/{id}/approve", _decide(True))
    app.router.add_post("/admin/reviews/{id}/deny", _decide(False))
    page.add_routes(app.router)
    return app
