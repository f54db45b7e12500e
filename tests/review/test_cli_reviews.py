"""`reefgate reviews ...` against a `reefgate serve` process, both as a user runs them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.observe.audit import verify
from gateway.review.model import Review
from gateway.review.sqlite import SQLiteStore
from tests.review.admin_helpers import (
    ADMIN_TOKEN,
    BLUE_TOKEN,
    ENV,
    RED_TOKEN,
    make_review,
)

REEFGATE = Path(sys.executable).with_name("reefgate")
# Nothing listens on the discard port.
DEAD_URL = "http://127.0.0.1:9"


@dataclass
class Served:
    admin_url: str
    admin_port: int
    store: Path
    audit: Path
    workdir: Path
    log: Path


def _write_config(directory: Path, tmp: Path, admin_port: int) -> None:
    (directory / "teams").mkdir(parents=True)
    (directory / "gateway.yaml").write_text(
        "listen: {host: 127.0.0.1, port: 0}\n"
        f"audit: {{path: {tmp / 'audit.jsonl'}}}\n"
        "upstreams:\n  openai: {base_url: 'http://127.0.0.1:9'}\n"
        f"review: {{store: 'sqlite:///{tmp / 'reviews.sqlite3'}'}}\n"
        f"admin:\n  listen: {{host: 127.0.0.1, port: {admin_port}}}\n  token_env: ADMIN_TOKEN\n"
    )
    for team in ("red", "blue"):
        (directory / "teams" / f"{team}.yaml").write_text(
            f"match: {{keys_env: [{team.upper()}_KEY]}}\n"
            f"reviewers: {{tokens_env: [{team.upper()}_REVIEWER]}}\n"
        )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("served")
    _write_config(tmp / "config", tmp, 0)
    log = tmp / "serve.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [str(REEFGATE), "serve", "--config", str(tmp / "config")],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=tmp,
            env={**os.environ, **ENV, "PYTHONUNBUFFERED": "1"},
        )
    try:
        assert proc.stdout is not None
        main_line = proc.stdout.readline()
        assert " listening on http://" in main_line, main_line + log.read_text()
        admin_line = proc.stdout.readline()
        assert admin_line.startswith("reefgate admin listening on http://127.0.0.1:"), admin_line
        admin_url = admin_line.split(" on ")[1].strip()
        workdir = tmp / "cli"
        workdir.mkdir()
        yield Served(
            admin_url=admin_url,
            admin_port=int(admin_url.rsplit(":", 1)[1]),
            store=tmp / "reviews.sqlite3",
            audit=tmp / "audit.jsonl",
            workdir=workdir,
            log=log,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    output = log.read_text()
    for token in (ADMIN_TOKEN, RED_TOKEN, BLUE_TOKEN):
        assert token not in output
    assert verify(tmp / "audit.jsonl").ok


def _submit(served: Served, review: Review) -> Review:
    """A review written by another process than the gateway, into the store it serves."""

    async def run() -> Review:
        store = SQLiteStore(served.store)
        await store.open()
        try:
            return await store.submit(review)
        finally:
            await store.close()

    return asyncio.run(run())


def _stored(served: Served, review_id: str) -> Review | None:
    async def run() -> Review | None:
        store = SQLiteStore(served.store)
        await store.open()
        try:
            return await store.get(review_id)
        finally:
            await store.close()

    return asyncio.run(run())


def _reviews(
    served: Served, *args: str, env: dict[str, str] | None = None, url: bool = True
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("REEFGATE_ADMIN_TOKEN", *ENV)}
    argv = [str(REEFGATE), "reviews", *args]
    if url:
        argv += ["--admin-url", served.admin_url]
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=served.workdir,
        env={**base, **(env or {})},
    )


def test_list_and_show_as_the_admin(served: Served) -> None:
    red = _submit(served, make_review("red", "cli-list-red"))
    blue = _submit(served, make_review("blue", "cli-list-blue"))
    admin = {"REEFGATE_ADMIN_TOKEN": ADMIN_TOKEN}

    out = _reviews(served, "list", env=admin)
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert header.split() == [
        "ID",
        "STATUS",
        "TEAM",
        "CATEGORY",
        "CREATED",
        "SOURCE",
        "->",
        "DESTINATION",
    ]
    assert {row.split()[0] for row in rows} >= {red.id, blue.id}

    out = _reviews(served, "list", "--status", "pending", "--team", "blue", "--json", env=admin)
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert blue.as_json() in listed
    assert {r["team"] for r in listed} == {"blue"}

    out = _reviews(served, "show", red.id, env=admin)
    assert out.returncode == 0, out.stderr
    assert f"id:             {red.id}" in out.stdout
    assert "status:         pending" in out.stdout
    assert f"reason:         {red.reason}" in out.stdout
    assert f"  {red.excerpt}" in out.stdout
    assert "  aws_access_key  fp:3f9a1c0d  messages[0].content" in out.stdout

    out = _reviews(served, "show", red.id, "--json", env=admin)
    assert json.loads(out.stdout) == red.as_json()


def test_the_url_and_token_default_from_the_config(served: Served, tmp_path: Path) -> None:
    # The reviewer's copy of the config: admin.listen and admin.token_env only
    # matter here, and no other variable it names need be set.
    _write_config(tmp_path / "config", tmp_path, served.admin_port)
    review = _submit(served, make_review("red", "cli-defaults"))
    out = _reviews(
        served,
        "list",
        "--config",
        str(tmp_path / "config"),
        "--json",
        env={"ADMIN_TOKEN": ADMIN_TOKEN},
        url=False,
    )
    assert out.returncode == 0, out.stderr
    assert review.id in {r["id"] for r in json.loads(out.stdout)}


def test_a_reviewer_approves_once(served: Served) -> None:
    review = _submit(served, make_review("red", "cli-approve"))
    out = _reviews(served, "approve", review.id, "--note", "fine", "--token", RED_TOKEN)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"approved {review.id} (decided by red:RED_REVIEWER)\n"
    stored = _stored(served, review.id)
    assert stored is not None
    assert (stored.status, stored.decided_by, stored.note) == (
        "approved",
        "red:RED_REVIEWER",
        "fine",
    )
    decisions = [
        json.loads(line)["event"]["payload"]
        for line in served.audit.read_text().splitlines()
        if json.loads(line)["event"]["type"] == "review_decision"
    ]
    assert {
        "review_id": review.id,
        "team": "red",
        "digest": review.digest,
        "decision": "approved",
        "decided_by": "red:RED_REVIEWER",
        "note_chars": 4,
    } in decisions

    again = _reviews(served, "deny", review.id, env={"REEFGATE_ADMIN_TOKEN": ADMIN_TOKEN})
    assert again.returncode == 1
    assert again.stderr == (
        f"error: review {review.id} is already approved (by red:RED_REVIEWER)\n"
    )
    assert _stored(served, review.id) == stored


def test_the_admin_denies(served: Served) -> None:
    review = _submit(served, make_review("blue", "cli-deny"))
    out = _reviews(served, "deny", review.id, env={"REEFGATE_ADMIN_TOKEN": ADMIN_TOKEN})
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"denied {review.id} (decided by admin)\n"


def test_another_teams_review_and_an_unknown_one(served: Served) -> None:
    blue = _submit(served, make_review("blue", "cli-forbidden"))
    for args in (("show", blue.id), ("approve", blue.id), ("deny", blue.id)):
        out = _reviews(served, *args, "--token", RED_TOKEN)
        assert out.returncode == 2, args
        assert out.stderr == "error: this token may not see team blue's reviews\n"
    assert _stored(served, blue.id) == blue

    out = _reviews(served, "approve", "rv_00000000000000000000000000000000", "--token", ADMIN_TOKEN)
    assert out.returncode == 1
    assert out.stderr == "error: no review rv_00000000000000000000000000000000\n"


def test_token_and_connection_errors(served: Served) -> None:
    out = _reviews(served, "list", "--token", "not-a-token")
    assert out.returncode == 2
    assert out.stderr.startswith("error: the admin API refused the token")

    out = _reviews(served, "list")
    assert out.returncode == 2
    assert out.stderr.startswith("error: no token: pass --token")

    out = _reviews(served, "list", "--admin-url", DEAD_URL, "--token", ADMIN_TOKEN, url=False)
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: cannot reach the admin API at {DEAD_URL}: ")

    out = _reviews(served, "list", "--status", "held", "--token", ADMIN_TOKEN)
    assert out.returncode == 2
    assert "invalid choice" in out.stderr


def test_text_from_a_review_cannot_drive_the_terminal(served: Served) -> None:
    review = _submit(
        served,
        make_review(
            "red",
            "cli-escapes",
            reason="\x1b]52;c;Y2xpcGJvYXJk\x07 copy this",
            excerpt="line one\n\x1b[2Jline two \u202eevil",
            category="exfil\x1b[31m",
        ),
    )
    admin = {"REEFGATE_ADMIN_TOKEN": ADMIN_TOKEN}
    shown = _reviews(served, "show", review.id, env=admin)
    listed = _reviews(served, "list", env=admin)
    for out in (shown, listed):
        assert out.returncode == 0, out.stderr
        assert "\x1b" not in out.stdout
        assert "\u202e" not in out.stdout
    assert "reason:         \\x1b]52;c;Y2xpcGJvYXJk\\x07 copy this" in shown.stdout
    assert "  line one\n  \\x1b[2Jline two \\u202eevil\n" in shown.stdout
    assert "exfil\\x1b[31m" in listed.stdout


def test_serve_stops_when_the_admin_port_is_taken(served: Served, tmp_path: Path) -> None:
    _write_config(tmp_path / "config", tmp_path, served.admin_port)
    out = subprocess.run(
        [str(REEFGATE), "serve", "--config", str(tmp_path / "config")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env={**os.environ, **ENV},
    )
    assert out.returncode == 2
    assert (
        f"error: cannot listen for reviewers on 127.0.0.1:{served.admin_port} (admin.listen): "
        in out.stderr
    )
    assert "admin listening" not in out.stdout
