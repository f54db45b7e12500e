"""The gateway's log lines: their format, the request they belong to, failures without payload.

An exception raised while handling a request may quote it (a library's
message, a value in a repr), so a failure is logged by its type and the code
locations of its traceback only: enough to find the bug, nothing to leak.

``logging.format: json`` (gateway.yaml) writes one JSON object per line::

    {"ts": "2026-12-01T09:30:00.123Z", "level": "info", "logger": "reefgate.access",
     "message": "...", "request_id": "..."}

``request_id`` is there for every line logged while a proxied request is
handled, by the gateway, the guard and the guardian alike: the request-id
middleware sets :data:`REQUEST_ID`, a context variable that the tasks the
request starts inherit. It is the ``x-reefgate-request-id`` header of the
answer and the ``request_id`` of the audit entry.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from contextvars import ContextVar
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from gateway.config.models import Logging

# The id of the request being handled, if any.
REQUEST_ID: ContextVar[str | None] = ContextVar("reefgate_request_id", default=None)

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def log_failure(logger: logging.Logger, what: str, exc: BaseException, context: str = "") -> None:
    where = "".join(traceback.format_tb(exc.__traceback__))
    suffix = f" ({context})" if context else ""
    logger.error("%s failed%s: %s\n%s", what, suffix, type(exc).__name__, where)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (newlines in a message are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        ms = int(record.msecs)
        entry: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{ms:03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None) or REQUEST_ID.get()
        if request_id:
            entry["request_id"] = request_id
        # As the text format does: the gateway's own failures go through
        # log_failure and carry no exception; a library's may.
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)


class _Handler(logging.StreamHandler[TextIO]):
    """The handler configure_logging installs, told apart from any other."""


def configure_logging(
    settings: Logging, *, level: str | None = None, stream: TextIO | None = None
) -> logging.Handler:
    """Log as ``settings`` says (``gateway.logging``), to stderr unless told otherwise.

    ``level`` (the command line's ``--log-level``) overrides ``settings.level``.
    Replaces the handler `logging.basicConfig` or an earlier call installed on
    the root logger; handlers others added (a test's capture) stay.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if type(handler) is logging.StreamHandler or isinstance(handler, _Handler):
            root.removeHandler(handler)
    handler = _Handler(stream if stream is not None else sys.stderr)
    handler.setFormatter(
        JsonFormatter() if settings.format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    root.addHandler(handler)
    name = (level or settings.level).upper()
    root.setLevel(logging.getLevelNamesMapping().get(name, logging.INFO))
    return handler
