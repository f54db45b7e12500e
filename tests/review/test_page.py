"""The reviewer page in a real headless Chromium, against the admin app on real SQLite stores."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from gateway.observe.audit import AuditLog
from gateway.review import page as page_module
from gateway.review.admin import make_admin_app
from gateway.review.gate import Reviews
from gateway.review.sqlite import SQLiteStore
from tests.review.admin_helpers import ADMIN_TOKEN, RED_TOKEN, admin_config, make_review
from tests.review.cdp import Page, chromium

AiohttpServer = Callable[..., Awaitable[TestServer]]


@dataclass
class Admin:
    url: str
    reviews: Reviews
    # The same SQLite file opened apart, as another gateway process would:
    # what it writes, the page only learns through the API.
    other: SQLiteStore


@pytest.fixture
async def admin(tmp_path: Path, aiohttp_server: AiohttpServer) -> AsyncIterator[Admin]:
    config = admin_config(tmp_path)
    reviews = Reviews(config)
    await reviews.open()
    audit = AuditLog(config.gateway.audit.path)
    audit.open()
    other = SQLiteStore(tmp_path / "reviews.sqlite3")
    await other.open()
    server = await aiohttp_server(make_admin_app(config, reviews, audit))
    try:
        yield Admin(str(server.make_url("/")), reviews, other)
    finally:
        await server.close()
        await other.close()
        await reviews.close()
        audit.close()


def _with_token(url: str, token: str) -> str:
    return f"{url}#token={urllib.parse.quote(token, safe='')}"


def _text(selector: str) -> str:
    return f"document.querySelector({json.dumps(selector)}).textContent"


async def _live(page: Page) -> None:
    """Signed in and the queue loaded at least once."""
    await page.wait_for(
        f"!document.querySelector('#main').hidden && {_text('#live')}.startsWith('live')"
    )


async def test_a_review_made_elsewhere_appears_and_is_approved_from_the_page(
    admin: Admin, tmp_path: Path
) -> None:
    async with chromium(tmp_path) as page:
        await page.goto(_with_token(admin.url, RED_TOKEN))
        await _live(page)
        # The token left the address bar for this tab's sessionStorage.
        assert await page.evaluate("location.hash") == ""
        assert await page.evaluate("sessionStorage.getItem('reefgate.reviewToken')") == RED_TOKEN
        assert await page.evaluate("document.querySelectorAll('#queue li').length") == 0
        assert await page.evaluate("!document.querySelector('#empty').hidden")

        review = await admin.other.submit(make_review("red", "please approve me"))
        blue = await admin.other.submit(make_review("blue", "not for red"))
        created = time.monotonic()
        item = f'#queue button[data-id="{review.id}"]'
        await page.wait_for(f"document.querySelector({json.dumps(item)}) !== null", within=5)
        # Polled every second.
        assert time.monotonic() - created < 3
        assert await page.evaluate("document.querySelectorAll('#queue li').length") == 1
        assert await page.evaluate(f"document.querySelector('[data-id=\"{blue.id}\"]')") is None
        assert await page.evaluate("document.title") == "(1) reefgate reviews"

        await page.click(item)
        await page.wait_for(f"{_text('#d-id')} === {json.dumps(review.id)}")
        assert await page.evaluate(_text("#d-reason")) == review.reason
        assert await page.evaluate(_text("#d-excerpt")) == review.excerpt
        assert await page.evaluate(_text("#d-category")) == review.category
        assert await page.evaluate(_text("#d-source")) == "red"
        assert await page.evaluate(_text("#d-destination")) == review.destination
        cells = await page.evaluate(
            "[...document.querySelectorAll('#d-findings td')].map((td) => td.textContent)"
        )
        assert cells == ["aws_access_key", "fp:3f9a1c0d", "messages[0].content"]

        await page.type("#note", "checked with the team")
        await page.click("#approve")
        await page.wait_for(f"{_text('#result')} === 'approved by red:RED_REVIEWER'")
        stored = await admin.other.get(review.id)
        assert stored is not None
        assert (stored.status, stored.decided_by, stored.note) == (
            "approved",
            "red:RED_REVIEWER",
            "checked with the team",
        )
        await page.wait_for("document.querySelectorAll('#queue li').length === 0")
        assert await page.evaluate("document.querySelector('#approve').disabled")
        assert page.errors() == []


async def test_text_from_a_review_is_shown_as_text_never_as_markup(
    admin: Admin, tmp_path: Path
) -> None:
    review = await admin.other.submit(
        make_review(
            "red",
            "hostile",
            category="<i>exfiltration</i>",
            reason='<img src=x onerror="window.__pwned = 1">',
            excerpt="</pre><script>window.__pwned = 2</script><b>bold</b>",
            source='red"><img src=x onerror="window.__pwned = 3">',
        )
    )
    async with chromium(tmp_path) as page:
        await page.goto(_with_token(admin.url, ADMIN_TOKEN))
        item = f'#queue button[data-id="{review.id}"]'
        await page.wait_for(f"document.querySelector({json.dumps(item)}) !== null")
        await page.click(item)
        await page.wait_for(f"{_text('#d-id')} === {json.dumps(review.id)}")
        assert await page.evaluate(_text("#d-reason")) == review.reason
        assert await page.evaluate(_text("#d-excerpt")) == review.excerpt
        assert await page.evaluate(_text("#d-category")) == review.category
        assert await page.evaluate(_text("#d-source")) == review.source
        injected = "document.querySelectorAll('main img, main script, main b, main i').length"
        assert await page.evaluate(injected) == 0
        # Give a handler that should never exist a full poll to run.
        await page.wait_for(f"{_text('#live')}.startsWith('live')")
        assert await page.evaluate("window.__pwned === undefined")
        assert page.errors() == []


async def test_a_refused_token_asks_again_and_a_decision_made_elsewhere_shows(
    admin: Admin, tmp_path: Path
) -> None:
    first = await admin.other.submit(make_review("red", 1))
    second = await admin.other.submit(make_review("red", 2))
    async with chromium(tmp_path) as page:
        await page.goto(_with_token(admin.url, "not-the-token"))
        await page.wait_for(f"{_text('#login-error')} === 'That token was not accepted.'")
        assert await page.evaluate("document.querySelector('#main').hidden")
        assert await page.evaluate("sessionStorage.getItem('reefgate.reviewToken')") is None

        await page.type("#token", ADMIN_TOKEN)
        await page.click("#login button[type=submit]")
        await _live(page)
        await page.wait_for("document.querySelectorAll('#queue li').length === 2")

        await page.click(f'#queue button[data-id="{first.id}"]')
        await page.wait_for(f"{_text('#d-status')} === 'pending'")
        # Another reviewer (or replica) denies it: the open detail follows.
        await admin.reviews.decide(first.id, approve=False, reviewer="red:RED_REVIEWER")
        await page.wait_for(f"{_text('#d-status')} === 'denied'", within=5)
        assert await page.evaluate("document.querySelector('#approve').disabled")
        assert (await page.evaluate(_text("#d-decided"))).startswith("red:RED_REVIEWER, ")

        await page.click(f'#queue button[data-id="{second.id}"]')
        await page.wait_for(f"{_text('#d-id')} === {json.dumps(second.id)}")
        await page.click("#deny")
        await page.wait_for(f"{_text('#result')} === 'denied by admin'")
        stored = await admin.other.get(second.id)
        assert stored is not None
        assert (stored.status, stored.decided_by, stored.note) == ("denied", "admin", None)
        assert page.errors() == []


async def test_the_page_is_served_with_a_policy_that_forbids_inline_script(admin: Admin) -> None:
    # A second line behind rendering with textContent: even injected markup
    # could not run a script or reach another origin.
    assert "innerHTML" not in page_module.JS
    assert "insertAdjacentHTML" not in page_module.JS
    async with aiohttp.ClientSession() as session:
        async with session.get(admin.url) as resp:
            assert resp.status == 200
            assert resp.content_type == "text/html"
            policy = resp.headers["Content-Security-Policy"]
            assert "script-src 'self'" in policy
            assert "default-src 'none'" in policy
            assert "frame-ancestors 'none'" in policy
            assert "<script" not in (await resp.text()).replace('<script src="/review.js"', "")
        async with session.get(admin.url + "review.js") as resp:
            assert resp.status == 200
            assert resp.content_type == "text/javascript"
