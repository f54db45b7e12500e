"""End to end in a real browser: an agent's request is held, a reviewer approves it on the
page, and the held request completes."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from pathlib import Path
from typing import Any

import openai

from gateway.app import AUDIT, CONFIG, REVIEWS
from gateway.config.models import Admin, Classifier, Guard, Team, TeamReview
from gateway.review.admin import make_admin_app
from tests.conftest import Stack, StackFactory
from tests.guard.fake_classifier import PINNED, FakeClassifier
from tests.review.cdp import chromium

ADMIN_TOKEN = "adm-" + "5d2e8b1c9f4a7e30"
HELD = "please REVIEWME before you send this"


async def test_approving_on_the_page_releases_the_held_request(
    make_stack: StackFactory, aiohttp_server: Any, tmp_path: Path
) -> None:
    guard = await aiohttp_server(FakeClassifier().app())
    classifier = Classifier(
        provider="openai",
        base_url=str(guard.make_url("")).rstrip("/"),
        pinned_model=PINNED,
        api_key_env="GUARD_KEY",
    )
    stack: Stack = await make_stack(
        guard=Guard(classifier=classifier),
        admin=Admin(token_env="ADMIN_TOKEN"),
        teams={"default": Team(default=True, review=TeamReview(hold="wait", hold_timeout_s=60))},
        env={"GUARD_KEY": "guard-key", "ADMIN_TOKEN": ADMIN_TOKEN},
    )
    app = stack.gateway.app
    admin = await aiohttp_server(make_admin_app(app[CONFIG], app[REVIEWS], app[AUDIT]))
    client = openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="agent", max_retries=0)
    held = asyncio.ensure_future(
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": HELD}]
        )
    )
    async with chromium(tmp_path) as page:
        await page.goto(f"{admin.make_url('/')}#token={urllib.parse.quote(ADMIN_TOKEN)}")
        item = "#queue button[data-id]"
        await page.wait_for(f"document.querySelector({json.dumps(item)}) !== null", within=10)
        assert not held.done()
        await page.click(item)
        await page.wait_for("document.querySelector('#d-id').textContent.startsWith('rv_')")
        await page.click("#approve")
        completion = await asyncio.wait_for(held, 10)
        assert completion.choices[0].message.content == "hello from upstream"
        assert page.errors() == []
    assert len(stack.upstream.received) == 1
    [review] = await app[REVIEWS].list(status="approved")
    assert review.decided_by == "admin"
