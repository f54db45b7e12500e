"""Logging failures without the payload.

An exception raised while handling a request may quote it (a library's
message, a value in a repr), so a failure is logged by its type and the code
locations of its traceback only: enough to find the bug, nothing to leak.
"""

from __future__ import annotations

import logging
import traceback


def log_failure(logger: logging.Logger, what: str, exc: BaseException, context: str = "") -> None:
    where = "".join(traceback.format_tb(exc.__traceback__))
    suffix = f" ({context})" if context else ""
    logger.error("%s failed%s: %s\n%s", what, suffix, type(exc).__name__, where)
