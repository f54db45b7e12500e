"""A config with an admin token and two teams' reviewers, and reviews to put in its store."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from gateway.config.loader import LoadedConfig
from gateway.config.models import (
    Admin,
    Audit,
    GatewayConfig,
    Match,
    Reviewers,
    Team,
    TeamReview,
    Upstream,
)
from gateway.config.models import Review as ReviewSettings
from gateway.review.model import Finding, Review, approval_digest, pending

ADMIN_TOKEN = "adm-7f3c1e9a2b4d6f80"
RED_TOKEN = "red-0a1b2c3d4e5f6a7b"
BLUE_TOKEN = "blue-9e8d7c6b5a4f3e2d"
# One reviewer's token listed by both teams.
DUO_TOKEN = "duo-1122334455667788"

ENV = {
    "ADMIN_TOKEN": ADMIN_TOKEN,
    "RED_REVIEWER": RED_TOKEN,
    "BLUE_REVIEWER": BLUE_TOKEN,
    "DUO_REVIEWER": DUO_TOKEN,
    "RED_KEY": "rg-red-agent-key",
    "BLUE_KEY": "rg-blue-agent-key",
}


def store_url(path: Path) -> str:
    return f"sqlite:///{path}"  # path is absolute: sqlite:////tmp/...


def admin_config(tmp_path: Path, *, admin_token: bool = True) -> LoadedConfig:
    """Teams red and blue on one SQLite store; the blue team's store may be given apart."""
    gateway = GatewayConfig(
        upstreams={"openai": Upstream(base_url="http://127.0.0.1:9")},
        audit=Audit(path=tmp_path / "audit.jsonl"),
        review=ReviewSettings(store=store_url(tmp_path / "reviews.sqlite3")),
        admin=Admin(token_env="ADMIN_TOKEN" if admin_token else None),
    )
    teams = {
        "red": Team(
            match=Match(keys_env=["RED_KEY"]),
            reviewers=Reviewers(tokens_env=["RED_REVIEWER", "DUO_REVIEWER"]),
        ),
        "blue": Team(
            match=Match(keys_env=["BLUE_KEY"]),
            reviewers=Reviewers(tokens_env=["BLUE_REVIEWER", "DUO_REVIEWER"]),
            # Its own store: the admin API looks in every store.
            review=TeamReview(store=store_url(tmp_path / "blue.sqlite3")),
        ),
    }
    return LoadedConfig(gateway=gateway, teams=teams, source=str(tmp_path), env=dict(ENV))


def make_review(team: str, body: object, **fields: Any) -> Review:
    """A pending review of `team` whose digest is that of `body`."""
    destination = "openai/gpt-4o-mini-2024-07-18"
    review = pending(
        team=team,
        digest=approval_digest(
            source=team,
            destination=destination,
            direction="outbound",
            body=body,
            policy_version="reef-v1",
        ),
        direction="outbound",
        source=team,
        destination=destination,
        category="exfiltration",
        reason="asks to send the deploy key to an outside address",
        policy_version="reef-v1",
        excerpt="please mail [REDACTED:aws_access_key] to ops@example.net",
        findings=(
            Finding(kind="aws_access_key", fingerprint="fp:3f9a1c0d", where="messages[0].content"),
        ),
    )
    return dataclasses.replace(review, **fields)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
