"""Structured logs: one JSON object per line, with the id of the request it belongs to."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from gateway.config.models import Logging
from gateway.observe.logs import REQUEST_ID, TEXT_FORMAT, JsonFormatter, configure_logging
from tests.conftest import Stack, StackFactory
from tests.fakes import FakeUpstream
from tests.replies import Call

CHAT = "/openai/v1/chat/completions"
SECRET = "ghp_" + "R8mK2xV7qL4nT9wB3cY6dH1jF5gP0sZ2aQ4e"


@pytest.fixture
def root_logging() -> Iterator[logging.Logger]:
    """The root logger's handlers and level, put back after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


@pytest.fixture
def json_lines(root_logging: logging.Logger) -> io.StringIO:
    """What the gateway logs at debug level as JSON, once the test has run."""
    stream = io.StringIO()
    configure_logging(Logging(format="json", level="debug"), stream=stream)
    return stream


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def _record(msg: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError as error:
            exc_info = (ValueError, error, error.__traceback__)
    return logging.LogRecord("reefgate.test", logging.WARNING, __file__, 1, msg, args, exc_info)


def test_a_record_is_one_json_line_with_the_fields() -> None:
    record = _record("two\nlines about %s", "this")
    record.created, record.msecs = 1_800_000_000.25, 250.0
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert json.loads(line) == {
        "ts": "2027-01-15T08:00:00.250Z",
        "level": "warning",
        "logger": "reefgate.test",
        "message": "two\nlines about this",
    }


def test_the_request_id_comes_from_the_context() -> None:
    token = REQUEST_ID.set("req-1")
    try:
        entry = json.loads(JsonFormatter().format(_record("inside")))
    finally:
        REQUEST_ID.reset(token)
    assert entry["request_id"] == "req-1"
    assert "request_id" not in json.loads(JsonFormatter().format(_record("outside")))


def test_an_exception_is_formatted_as_text_is() -> None:
    entry = json.loads(JsonFormatter().format(_record("failed", exc=True)))
    assert "ValueError: boom" in entry["exc_info"]


def test_configure_logging_replaces_only_its_own_handler(root_logging: logging.Logger) -> None:
    basic = logging.StreamHandler(io.StringIO())
    other = logging.NullHandler()
    root_logging.addHandler(basic)
    root_logging.addHandler(other)
    first = configure_logging(Logging(format="json", level="warning"), stream=io.StringIO())
    assert basic not in root_logging.handlers and other in root_logging.handlers
    assert isinstance(first.formatter, JsonFormatter)
    assert root_logging.level == logging.WARNING
    # Again, as text, with the command line's level: the first one goes.
    second = configure_logging(Logging(format="json"), level="DEBUG", stream=io.StringIO())
    assert first not in root_logging.handlers and second in root_logging.handlers
    assert root_logging.level == logging.DEBUG
    third = configure_logging(Logging(format="text", level="error"))
    assert second not in root_logging.handlers
    assert third.formatter is not None and third.formatter._fmt == TEXT_FORMAT
    assert root_logging.level == logging.ERROR


async def _post(stack: Stack, body: object) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.post(stack.url + CHAT, json=body) as r:
        await r.read()
        return r.status, r.headers["x-reefgate-request-id"]


def _audit(stack: Stack) -> list[dict[str, Any]]:
    lines = stack.audit_path.read_text().splitlines()
    return [json.loads(line)["event"]["payload"] for line in lines]


async def test_a_request_logs_json_with_its_request_id(
    make_stack: StackFactory, json_lines: io.StringIO
) -> None:
    stack: Stack = await make_stack()
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}
    status, request_id = await _post(stack, body)
    assert status == 200
    [entry] = _audit(stack)
    assert entry["request_id"] == request_id
    [access] = [line for line in _lines(json_lines) if line.get("request_id") == request_id]
    assert access["logger"] == "reefgate.access" and access["level"] == "debug"
    assert "team default" in access["message"] and "allow/none" in access["message"]
    assert set(access) == {"ts", "level", "logger", "message", "request_id"}


async def test_the_guards_lines_carry_the_request_id_and_no_secret(
    make_stack: StackFactory, json_lines: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.guard.detectors import injection

    def broken(*args: object) -> object:
        raise ValueError(f"cannot handle {SECRET}")

    monkeypatch.setattr(injection, "assess", broken)
    stack: Stack = await make_stack()
    body = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": "look this up"},
            {"role": "tool", "tool_call_id": "call_1", "content": "the weather is fine"},
        ],
    }
    status, request_id = await _post(stack, body)
    assert status == 403
    assert _audit(stack)[0]["request_id"] == request_id
    [failure] = [line for line in _lines(json_lines) if line["logger"] == "reefgate.guard"]
    assert failure["request_id"] == request_id and failure["level"] == "error"
    assert "ValueError" in failure["message"]
    assert SECRET not in json_lines.getvalue()


async def test_the_guardians_lines_carry_the_request_id(
    make_stack: StackFactory, json_lines: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.guard.guardian import judge

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the rules broke")

    monkeypatch.setattr(judge, "assess", broken)
    fake = FakeUpstream(reply=("On it.", [Call.shell("ls -la")]))
    stack: Stack = await make_stack(fake)
    client = openai.AsyncOpenAI(base_url=f"{stack.url}/openai/v1", api_key="agent", max_retries=0)
    response = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "list the files"}],
        stream=True,
    )
    request_id = response.headers["x-reefgate-request-id"]
    async for _ in response.parse():
        pass
    [entry] = _audit(stack)
    assert entry["request_id"] == request_id
    assert entry["tool_calls"][0]["rule"] == "guard_failure"
    [failure] = [line for line in _lines(json_lines) if line["logger"] == "reefgate.guardian"]
    assert failure["request_id"] == request_id
    assert "RuntimeError" in failure["message"]
    # Nothing logged outside a request claims one.
    assert all(line.get("request_id") in (None, request_id) for line in _lines(json_lines))


def test_serve_logs_json_as_configured_at_the_command_lines_level(tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "teams").mkdir(parents=True)
    audit = tmp_path / "audit.jsonl"
    (config / "gateway.yaml").write_text(
        f"listen: {{host: 127.0.0.1, port: 0}}\naudit: {{path: {audit}}}\n"
        "upstreams:\n  openai: {base_url: 'http://127.0.0.1:9'}\n"
        "logging: {format: json, level: error}\n"
    )
    (config / "teams" / "default.yaml").write_text("default: true\n")
    reefgate = Path(sys.executable).with_name("reefgate")
    proc = subprocess.Popen(
        [str(reefgate), "--log-level", "DEBUG", "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        base = line.split("listening on ")[1].split()[0]
        request = urllib.request.Request(
            base + CHAT,
            data=b'{"model":"m","messages":[{"role":"user","content":"hi"}]}',
            headers={"Content-Type": "application/json"},
        )
        # The upstream is dead: 502, answered with the request's id.
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=15)
        request_id = info.value.headers["x-reefgate-request-id"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
    assert proc.returncode == 0, stderr
    lines = [json.loads(line) for line in stderr.splitlines()]
    [access] = [line for line in lines if line.get("request_id") == request_id]
    assert access["logger"] == "reefgate.access" and access["level"] == "debug"
    [entry] = [json.loads(line)["event"]["payload"] for line in audit.read_text().splitlines()]
    assert entry["request_id"] == request_id
