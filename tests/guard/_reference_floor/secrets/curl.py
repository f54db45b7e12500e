"""curl command lines: ``-u user:password``."""

from __future__ import annotations

import re

from tests.guard._reference_floor.secrets.assigned_values import _read_value
from tests.guard._reference_floor.secrets.assignments import _pw_like
from tests.guard._reference_floor.secrets.common import _A, _PRIO_CONTEXT, _Ctx
from tests.guard._reference_floor.secrets.urls import _BRACED_RE, _credential_ok
from tests.guard._reference_floor.secrets.values import _char_classes

_CURL = ("url(?<=curl)", r"\b")
_CURL_WORD_RE = re.compile(r"[cC][uU][rR][lL]", _A)
_CURL_USER_RE = re.compile(r"\s(?:-u|--user)(?:[ \t]{1,4}|=)", _A)


def _on_curl(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    start = end = m.end()
    # The command runs to the end of the line, or further after "\" continuations,
    # and stops at the next curl, so that repeated commands are read once.
    limit = min(len(text), start + 4096)
    nxt = _CURL_WORD_RE.search(text, start, limit)
    limit = limit if nxt is None else nxt.start()
    while end < limit:
        nl = text.find("\n", end, limit)
        if nl < 0:
            end = limit
            break
        end = nl + 1
        if not _continued(text, nl):
            break
    for um in _CURL_USER_RE.finditer(text, start, end):
        _curl_user(ctx, um.end())


def _continued(text: str, nl: int) -> bool:
    """The line ending at ``nl`` ends in a backslash (before any carriage returns)."""
    i = nl
    while i > 0 and text[i - 1] == "\r":
        i -= 1
    return i > 0 and text[i - 1] == "\\"


def _curl_user(ctx: _Ctx, pos: int) -> None:
    text = ctx.text
    rv = _read_value(text, pos)
    if rv is None:
        return
    vs, ve, quoted = rv
    v = text[vs:ve]
    pw_span: tuple[int, int] | None = None
    if quoted and text.startswith(":", ve + 1):
        # --user "{id}":"{secret}" quotes each half.
        rv2 = _read_value(text, ve + 2)
        user = v
        if rv2 is not None:
            pw_span = rv2[0], rv2[1]
    else:
        user, sep, pw = v.partition(":")
        if not sep:
            return
        if pw:
            pw_span = vs + len(user) + 1, ve
        elif not quoted and text.startswith(("'", '"'), ve):
            # kevin:'secret' quotes only the password.
            rv2 = _read_value(text, ve)
            if rv2 is not None:
                pw_span = rv2[0], rv2[1]
        elif _pw_like(user) and len(user) >= 10 and _char_classes(user) >= 3:
            ctx.add(vs, vs + len(user), "basic_auth", _PRIO_CONTEXT)
            return
    if pw_span is not None:
        pw = text[pw_span[0] : pw_span[1]]
        braced = _BRACED_RE.fullmatch(pw)
        bare = braced.group(1) if braced is not None else pw
        if _credential_ok(user, pw) and _pw_like(bare):
            ctx.add(pw_span[0], pw_span[1], "basic_auth", _PRIO_CONTEXT)
