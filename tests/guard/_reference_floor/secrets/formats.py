"""Formats found at a "~" or a "|": Azure client secrets, OpenShift and Facebook app tokens."""

from __future__ import annotations

import re

from tests.guard._reference_floor.secrets.common import _A, _PRIO_SPECIFIC, _Ctx
from tests.guard._reference_floor.secrets.values import (
    _char_classes,
    _clean_token,
    _left_ok,
)

_TILDE_RE = re.compile(r"~(?:(?<=[0-9]Q~)|(?<=sha256~))", _A)
_AZURE_SECRET_RE = re.compile(
    r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", _A
)
_OPENSHIFT_RE = re.compile(r"sha256~[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])", _A)


def _on_tilde(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    if text[pos - 1] == "Q":
        start, rx, kind, extra = pos - 5, _AZURE_SECRET_RE, "azure_client_secret", "_~.-"
    else:
        start, rx, kind, extra = pos - 6, _OPENSHIFT_RE, "openshift_token", "_"
    if start < 0 or not _left_ok(text, start, extra):
        return
    tm = rx.match(text, start)
    if tm is not None and _clean_token(tm.group(0)) and _char_classes(tm.group(0)) >= 3:
        ctx.add(start, tm.end(), kind, _PRIO_SPECIFIC)


# Facebook app access token: <15-16 digit app id>|<27 characters>
_PIPE_RE = re.compile(r"\|(?<=[0-9]{15}\|)(?=[A-Za-z0-9_-]{27}(?![A-Za-z0-9_-]))", _A)


def _on_pipe(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    start = m.start() - 15
    if start > 0 and text[start - 1].isdigit():
        start -= 1
    tok = text[m.end() : m.end() + 27]
    if _left_ok(text, start, "_") and _char_classes(tok) >= 3 and _clean_token(tok):
        ctx.add(start, m.end() + 27, "facebook_token", _PRIO_SPECIFIC)
