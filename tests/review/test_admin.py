"""The admin API against real SQLite stores and a real audit log."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.config.loader import LoadedConfig
from gateway.observe.audit import AuditLog, verify
from gateway.review.admin import MAX_NOTE_CHARS, Tokens, make_admin_app, tokens_configured
from gateway.review.gate import Reviews
from gateway.review.model import Review
from tests.review.admin_helpers import (
    ADMIN_TOKEN,
    BLUE_TOKEN,
    DUO_TOKEN,
    RED_TOKEN,
    admin_config,
    auth,
    make_review,
)

AiohttpClient = Callable[..., Awaitable[TestClient[Any, Any]]]


@dataclass
class Admin:
    client: TestClient[Any, Any]
    reviews: Reviews
    audit: AuditLog
    red: Review
    red_old: Review
    blue: Review

    def audit_events(self) -> list[dict[str, Any]]:
        lines = self.audit.path.read_text().splitlines()
        return [json.loads(line)["event"] for line in lines]


@pytest.fixture
async def admin(tmp_path: Path, aiohttp_client: AiohttpClient) -> AsyncIterator[Admin]:
    config = admin_config(tmp_path)
    reviews = Reviews(config)
    await reviews.open()
    audit = AuditLog(config.gateway.audit.path)
    audit.open()
    red_old = await reviews.store("red").submit(make_review("red", "old", created=1000.0))
    red = await reviews.store("red").submit(make_review("red", "new", created=2000.0))
    blue = await reviews.store("blue").submit(make_review("blue", "b", created=1500.0))
    client = await aiohttp_client(make_admin_app(config, reviews, audit))
    try:
        yield Admin(client, reviews, audit, red, red_old, blue)
    finally:
        await client.close()
        await reviews.close()
        audit.close()


async def _ids(admin: Admin, token: str, query: str = "") -> list[str]:
    resp = await admin.client.get(f"/admin/reviews{query}", headers=auth(token))
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert isinstance(body, list)
    return [r["id"] for r in body]


async def test_admin_lists_every_team_newest_first(admin: Admin) -> None:
    assert await _ids(admin, ADMIN_TOKEN) == [admin.red.id, admin.blue.id, admin.red_old.id]
    resp = await admin.client.get("/admin/reviews?status=pending", headers=auth(ADMIN_TOKEN))
    listed = await resp.json()
    assert listed[0] == admin.red.as_json()
    assert set(listed[0]) >= {
        "id",
        "team",
        "direction",
        "source",
        "destination",
        "category",
        "reason",
        "digest",
        "created",
        "decided_by",
        "decided_at",
        "excerpt",
        "findings",
    }
    assert listed[0]["findings"] == [
        {"kind": "aws_access_key", "fingerprint": "fp:3f9a1c0d", "where": "messages[0].content"}
    ]
    assert resp.headers["Cache-Control"] == "no-store"


async def test_list_filters_by_status_and_team(admin: Admin) -> None:
    await admin.reviews.decide(admin.red_old.id, approve=False, reviewer="admin")
    assert await _ids(admin, ADMIN_TOKEN, "?status=pending") == [admin.red.id, admin.blue.id]
    assert await _ids(admin, ADMIN_TOKEN, "?status=denied") == [admin.red_old.id]
    assert await _ids(admin, ADMIN_TOKEN, "?status=approved") == []
    assert await _ids(admin, ADMIN_TOKEN, "?team=blue") == [admin.blue.id]
    assert await _ids(admin, ADMIN_TOKEN, "?team=red&status=pending") == [admin.red.id]


async def test_a_reviewer_lists_only_their_teams_reviews(admin: Admin) -> None:
    assert await _ids(admin, RED_TOKEN) == [admin.red.id, admin.red_old.id]
    assert await _ids(admin, BLUE_TOKEN) == [admin.blue.id]
    assert await _ids(admin, RED_TOKEN, "?team=red&status=pending") == [
        admin.red.id,
        admin.red_old.id,
    ]
    # A token both teams list sees both.
    assert await _ids(admin, DUO_TOKEN) == [admin.red.id, admin.blue.id, admin.red_old.id]
    resp = await admin.client.get("/admin/reviews?team=blue", headers=auth(RED_TOKEN))
    assert resp.status == 403
    assert (await resp.json())["error"]["code"] == "forbidden"


async def test_an_unknown_status_is_a_bad_request(admin: Admin) -> None:
    resp = await admin.client.get("/admin/reviews?status=held", headers=auth(ADMIN_TOKEN))
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "invalid_request"


async def test_show_one_review(admin: Admin) -> None:
    for token in (ADMIN_TOKEN, BLUE_TOKEN, DUO_TOKEN):
        resp = await admin.client.get(f"/admin/reviews/{admin.blue.id}", headers=auth(token))
        assert resp.status == 200
        assert await resp.json() == admin.blue.as_json()


async def test_another_teams_reviewer_may_not_see_or_decide(admin: Admin) -> None:
    url = f"/admin/reviews/{admin.blue.id}"
    resp = await admin.client.get(url, headers=auth(RED_TOKEN))
    assert resp.status == 403
    assert (await resp.json())["error"]["code"] == "forbidden"
    for action in ("approve", "deny"):
        resp = await admin.client.post(f"{url}/{action}", headers=auth(RED_TOKEN))
        assert resp.status == 403
    assert (await admin.reviews.store("blue").get(admin.blue.id)) == admin.blue
    assert admin.audit_events() == []


@pytest.mark.parametrize(
    "headers",
    [
        {},
        auth("not-a-token"),
        auth(RED_TOKEN[:-1]),
        auth(RED_TOKEN + "x"),
        {"Authorization": f"Basic {ADMIN_TOKEN}"},
        {"Authorization": "Bearer "},
        {"Authorization": ADMIN_TOKEN},
    ],
    ids=["none", "wrong", "prefix", "longer", "basic", "empty", "no-scheme"],
)
async def test_without_a_known_token_everything_is_401(
    admin: Admin, headers: dict[str, str]
) -> None:
    requests = [
        ("GET", "/admin/reviews"),
        ("GET", f"/admin/reviews/{admin.red.id}"),
        ("GET", "/admin/reviews/rv_unknown"),
        ("POST", f"/admin/reviews/{admin.red.id}/approve"),
        ("POST", f"/admin/reviews/{admin.red.id}/deny"),
        ("GET", "/admin/elsewhere"),
    ]
    for method, path in requests:
        resp = await admin.client.request(method, path, headers=headers)
        assert resp.status == 401, (method, path)
        body = await resp.json()
        assert body["error"]["code"] == "unauthorized"
        assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert (await admin.reviews.store("red").get(admin.red.id)) == admin.red
    assert admin.audit_events() == []


async def test_a_token_that_is_not_utf8_is_401(admin: Admin) -> None:
    server = admin.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(
        b"GET /admin/reviews HTTP/1.1\r\nHost: admin\r\n"
        b"Authorization: Bearer \xff\xfe" + RED_TOKEN.encode() + b"\r\n"
        b"Connection: close\r\n\r\n"
    )
    answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
    assert b'"code":"unauthorized"' in answer.replace(b" ", b"")


async def test_the_bearer_scheme_is_case_insensitive(admin: Admin) -> None:
    resp = await admin.client.get(
        "/admin/reviews", headers={"Authorization": f"bearer {RED_TOKEN}"}
    )
    assert resp.status == 200


async def test_unknown_review_is_404(admin: Admin) -> None:
    for method, path in [
        ("GET", "/admin/reviews/rv_00000000000000000000000000000000"),
        ("POST", "/admin/reviews/rv_00000000000000000000000000000000/approve"),
        ("POST", "/admin/reviews/rv_00000000000000000000000000000000/deny"),
        ("GET", "/admin/reviews/%2e%2e"),
    ]:
        resp = await admin.client.request(method, path, headers=auth(ADMIN_TOKEN))
        assert resp.status == 404, path
        assert (await resp.json())["error"]["code"] == "not_found"


async def test_a_reviewer_approves_their_teams_review(admin: Admin) -> None:
    resp = await admin.client.post(
        f"/admin/reviews/{admin.red.id}/approve",
        headers=auth(RED_TOKEN),
        json={"note": "expected: the runbook says so"},
    )
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == "approved"
    assert body["decided_by"] == "red:RED_REVIEWER"
    stored = await admin.reviews.store("red").get(admin.red.id)
    assert stored is not None
    assert stored.status == "approved"
    assert stored.decided_by == "red:RED_REVIEWER"
    assert stored.note == "expected: the runbook says so"
    [event] = admin.audit_events()
    assert event["type"] == "review_decision"
    assert event["payload"] == {
        "review_id": admin.red.id,
        "team": "red",
        "digest": admin.red.digest,
        "decision": "approved",
        "decided_by": "red:RED_REVIEWER",
        "note_chars": len("expected: the runbook says so"),
    }
    text = admin.audit.path.read_text()
    assert "runbook" not in text
    assert RED_TOKEN not in text
    assert verify(admin.audit.path).ok


async def test_the_admin_denies_any_teams_review_without_a_note(admin: Admin) -> None:
    resp = await admin.client.post(
        f"/admin/reviews/{admin.blue.id}/deny", headers=auth(ADMIN_TOKEN)
    )
    assert resp.status == 200
    stored = await admin.reviews.store("blue").get(admin.blue.id)
    assert stored is not None
    assert (stored.status, stored.decided_by, stored.note) == ("denied", "admin", None)
    [event] = admin.audit_events()
    assert event["payload"]["decision"] == "denied"
    assert event["payload"]["decided_by"] == "admin"
    assert event["payload"]["note_chars"] == 0


async def test_a_reviewer_of_two_teams_is_named_by_the_reviews_team(admin: Admin) -> None:
    for review, expected in ((admin.red, "red:DUO_REVIEWER"), (admin.blue, "blue:DUO_REVIEWER")):
        resp = await admin.client.post(
            f"/admin/reviews/{review.id}/approve", headers=auth(DUO_TOKEN), json={}
        )
        assert resp.status == 200
        assert (await resp.json())["decided_by"] == expected


async def test_a_decision_is_made_once(admin: Admin) -> None:
    url = f"/admin/reviews/{admin.red.id}"
    first = await admin.client.post(f"{url}/deny", headers=auth(RED_TOKEN))
    assert first.status == 200
    for action in ("approve", "deny"):
        again = await admin.client.post(f"{url}/{action}", headers=auth(ADMIN_TOKEN))
        assert again.status == 409
        error = (await again.json())["error"]
        assert error["code"] == "already_decided"
        assert error["status"] == "denied"
        assert error["decided_by"] == "red:RED_REVIEWER"
    stored = await admin.reviews.store("red").get(admin.red.id)
    assert stored is not None
    assert (stored.status, stored.decided_by) == ("denied", "red:RED_REVIEWER")
    assert len(admin.audit_events()) == 1


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b'{"note": 7}',
        b'{"note": "ok", "approve": false}',
        b'["note"]',
        json.dumps({"note": "x" * (MAX_NOTE_CHARS + 1)}).encode(),
    ],
    ids=["invalid-json", "note-not-string", "extra-key", "not-object", "note-too-long"],
)
async def test_a_malformed_decision_body_decides_nothing(admin: Admin, body: bytes) -> None:
    resp = await admin.client.post(
        f"/admin/reviews/{admin.red.id}/approve",
        headers={**auth(ADMIN_TOKEN), "Content-Type": "application/json"},
        data=body,
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "invalid_request"
    assert (await admin.reviews.store("red").get(admin.red.id)) == admin.red
    assert admin.audit_events() == []


async def test_an_oversized_body_is_refused_in_the_error_shape(admin: Admin) -> None:
    resp = await admin.client.post(
        f"/admin/reviews/{admin.red.id}/approve",
        headers={**auth(ADMIN_TOKEN), "Content-Type": "application/json"},
        data=json.dumps({"note": "x" * 100_000}).encode(),
    )
    assert resp.status == 413
    assert (await resp.json())["error"]["code"] == "request_too_large"
    assert (await admin.reviews.store("red").get(admin.red.id)) == admin.red


async def test_a_store_that_cannot_be_used_answers_503(admin: Admin) -> None:
    await admin.reviews.close()
    for method, path in [
        ("GET", "/admin/reviews"),
        ("GET", f"/admin/reviews/{admin.red.id}"),
        ("POST", f"/admin/reviews/{admin.red.id}/approve"),
    ]:
        resp = await admin.client.request(method, path, headers=auth(ADMIN_TOKEN))
        assert resp.status == 503, path
        error = (await resp.json())["error"]
        assert error == {"code": "store_unavailable", "message": "the review store cannot be used"}
    await admin.reviews.open()  # for the fixture's close


async def test_a_decision_the_audit_log_cannot_record_fails_closed(
    tmp_path: Path, aiohttp_client: AiohttpClient
) -> None:
    # /dev/full accepts the open and fails every write with ENOSPC.
    config = admin_config(tmp_path)
    reviews = Reviews(config)
    await reviews.open()
    audit = AuditLog(Path("/dev/full"))
    audit.open()
    first = await reviews.store("red").submit(make_review("red", 1))
    second = await reviews.store("red").submit(make_review("red", 2))
    client = await aiohttp_client(make_admin_app(config, reviews, audit))
    try:
        resp = await client.post(f"/admin/reviews/{first.id}/approve", headers=auth(ADMIN_TOKEN))
        # Made, but the reviewer is told it is not on the record.
        assert resp.status == 503
        error = (await resp.json())["error"]
        assert error["code"] == "audit_unavailable"
        assert "approved" in error["message"]
        assert audit.failed is not None
        # With the log known broken, no further decision is made.
        resp = await client.post(f"/admin/reviews/{second.id}/approve", headers=auth(ADMIN_TOKEN))
        assert resp.status == 503
        assert (await resp.json())["error"]["code"] == "audit_unavailable"
        assert (await reviews.store("red").get(second.id)) == second
    finally:
        await client.close()
        await reviews.close()
        audit.close()


def test_tokens_identify_by_exact_value(tmp_path: Path) -> None:
    tokens = Tokens(admin_config(tmp_path))
    admin = tokens.identify(f"Bearer {ADMIN_TOKEN}")
    assert admin is not None
    assert admin.admin
    red = tokens.identify(f"Bearer   {RED_TOKEN}  ")
    assert red is not None
    assert not red.admin
    assert dict(red.teams) == {"red": "RED_REVIEWER"}
    assert red.name_for("red") == "red:RED_REVIEWER"
    assert not red.may_see("blue")
    duo = tokens.identify(f"Bearer {DUO_TOKEN}")
    assert duo is not None
    assert dict(duo.teams) == {"blue": "DUO_REVIEWER", "red": "DUO_REVIEWER"}
    assert tokens.identify(None) is None
    assert tokens.identify("Bearer") is None
    assert tokens.identify(f"Token {ADMIN_TOKEN}") is None


def test_no_token_configured_means_no_admin_listener(tmp_path: Path) -> None:
    config = admin_config(tmp_path, admin_token=False)
    assert tokens_configured(config)  # the teams' reviewers
    no_teams = LoadedConfig(gateway=config.gateway, teams={}, env=config.env)
    assert not tokens_configured(no_teams)
    # A named variable without a value opens nothing.
    with_admin = admin_config(tmp_path).gateway
    assert not tokens_configured(LoadedConfig(gateway=with_admin, teams={}, env={}))
    assert tokens_configured(LoadedConfig(gateway=with_admin, teams={}, env=config.env))
