"""Bundler host credentials (``BUNDLE_GEMS__EXAMPLE__COM=user:password``)."""

from __future__ import annotations

import re

from tests.guard._reference_floor.secrets.assigned_values import _read_value
from tests.guard._reference_floor.secrets.assignments import _pw_like
from tests.guard._reference_floor.secrets.common import _A, _PRIO_CONTEXT, _Ctx
from tests.guard._reference_floor.secrets.urls import _credential_ok
from tests.guard._reference_floor.secrets.values import _left_ok

_BUNDLE_RE = re.compile(r"BUNDLE_[A-Z0-9_]{0,60}__[A-Z0-9]{2,20}[\"']?[ \t]{0,4}[:=][ \t]{0,4}", _A)


def _on_bundle(ctx: _Ctx, start: int) -> None:
    bm = _BUNDLE_RE.match(ctx.text, start)
    if bm is None or not _left_ok(ctx.text, start, "_"):
        return
    rv = _read_value(ctx.text, bm.end())
    if rv is None:
        return
    vs, ve, _ = rv
    user, sep, pw = ctx.text[vs:ve].partition(":")
    if sep and _credential_ok(user, pw) and _pw_like(pw):
        ctx.add(vs + len(user) + 1, ve, "basic_auth", _PRIO_CONTEXT)
