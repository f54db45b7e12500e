"""A headless Chromium driven over the Chrome DevTools Protocol, with aiohttp only.

The system's `chromium` (Debian package) is started with a fresh profile and
``--remote-debugging-port=0``; the port it picked is read from the
``DevToolsActivePort`` file it writes into that profile. Nothing is
downloaded. Clicks and typing go through ``Input.*`` events, as a user's do.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
_START_TIMEOUT_S = 30.0


class CDPError(Exception):
    pass


class Page:
    """One tab: evaluate JavaScript, wait for a condition, click, type."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self._ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(msg.data)
            future = self._pending.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(data)
            elif "method" in data:
                self.events.append(data)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(CDPError("the DevTools connection closed"))

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        await self._ws.send_json({"id": call_id, "method": method, "params": params})
        async with asyncio.timeout(15):
            answer = await future
        if "error" in answer:
            raise CDPError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise CDPError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, within: float = 10.0) -> Any:
        """The first truthy value of `expression`, polled every 50 ms."""
        deadline = time.monotonic() + within
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for: {expression}")
            await asyncio.sleep(0.05)

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete'")

    async def click(self, selector: str) -> None:
        """A left click in the middle of the element, through the input pipeline."""
        box = await self.wait_for(
            f"""(() => {{
                const el = document.querySelector({json.dumps(selector)});
                if (!el || el.disabled || el.offsetParent === null) return null;
                el.scrollIntoView({{block: "center"}});
                const r = el.getBoundingClientRect();
                return [r.x + r.width / 2, r.y + r.height / 2];
            }})()"""
        )
        x, y = box
        await self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            await self.send(
                "Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1
            )

    async def type(self, selector: str, text: str) -> None:
        await self.click(selector)
        await self.send("Input.insertText", text=text)

    def errors(self) -> list[str]:
        """Script exceptions, console errors and browser log errors (CSP included).

        Failed loads the page expects (a 401 or 409 it handles) are network
        entries and are left out.
        """
        found = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded":
                entry = params.get("entry", {})
                if entry.get("level") == "error" and entry.get("source") != "network":
                    found.append(f"{entry.get('source')}: {entry.get('text')}")
        return found

    async def close(self) -> None:
        await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    # Its own session: whatever helper processes outlive the browser go too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _launch(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start Chromium and wait for the DevTools port it picked."""
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    log = tmp_path / "chromium.log"
    with log.open("wb") as log_file:
        proc = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
                f"--user-data-dir={profile}",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-dev-shm-usage",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise CDPError(f"chromium exited with {proc.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError, ValueError, IndexError):
            return proc, int(marker.read_text().splitlines()[0])
        time.sleep(0.05)
    _stop(proc)
    raise CDPError(f"chromium did not open its DevTools port: {log.read_text()[-2000:]}")


@contextlib.asynccontextmanager
async def chromium(tmp_path: Path) -> AsyncIterator[Page]:
    """A fresh headless Chromium and one blank tab in it."""
    proc, port = await asyncio.to_thread(_launch, tmp_path)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as resp:
                targets = await resp.json()
            url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            ws = await session.ws_connect(url, max_msg_size=64 * 1024 * 1024)
            page = Page(ws)
            try:
                for domain in ("Page", "Runtime", "Log"):
                    await page.send(f"{domain}.enable")
                yield page
            finally:
                await page.close()
    finally:
        await asyncio.to_thread(_stop, proc)
