"""JSON Web Tokens."""

from __future__ import annotations

import base64
import re

from tests.guard._reference_floor.secrets.common import _A, _PRIO_SPECIFIC, _Ctx
from tests.guard._reference_floor.secrets.values import _MARKER_RE, _has_marker, _left_ok

_JWT_PASS_RE = re.compile(r"J(?<=eyJ)", _A)
# The rule as one pattern (what _on_jwt matches, read in parts).
_JWT_RE = re.compile(
    r"eyJ[A-Za-z0-9_-]{10,4096}\.[A-Za-z0-9_-]{10,16384}(?:\.[A-Za-z0-9_-]{0,4096}){0,3}", _A
)


_JWT_RUN_RE = re.compile(r"[A-Za-z0-9_-]*", _A)
_JWT_TAIL_RE = re.compile(r"\.[A-Za-z0-9_-]{10,16384}(?:\.[A-Za-z0-9_-]{0,4096}){0,3}", _A)


def _on_jwt(ctx: _Ctx, m: re.Match[str]) -> None:
    """What _JWT_RE matches at the "eyJ", with a JSON header and no marker.

    Every "eyJ" inside one run of header characters ends its header where the run
    ends, and shares what follows, so the run and the tail are read once for all
    of them ("-eyJ-eyJ-eyJ..." would otherwise read 4 KB per "eyJ").
    """
    text = ctx.text
    start = m.start() - 2
    if start < ctx.jwt_skip or not _left_ok(text, start):
        return
    if start >= ctx.jwt_run_end:
        _jwt_run(ctx, start)
    run_end = ctx.jwt_run_end
    header = run_end - start - 3
    if header < 10 or ctx.jwt_tail_end < 0:
        ctx.jwt_skip = run_end  # later starts have shorter headers and the same tail
        return
    if header > 4096 or ctx.jwt_tail_marker or ctx.jwt_last_marker >= start:
        return  # too long for the pattern, or a placeholder
    # A JOSE header is a JSON object. Base64 of length 4k+1 does not decode, any
    # other length does, and its first three bytes come from its first four characters.
    head = base64.urlsafe_b64decode(text[start : start + 4])
    if (run_end - start) % 4 != 1 and head.startswith(b'{"'):
        ctx.add(start, ctx.jwt_tail_end, "jwt", _PRIO_SPECIFIC)
        ctx.jwt_skip = run_end  # later starts in the run give hits inside this one


def _jwt_run(ctx: _Ctx, start: int) -> None:
    """Read the header run from ``start``, the tail after it, and their markers."""
    text = ctx.text
    run_end = _JWT_RUN_RE.match(text, start + 3).end()  # type: ignore[union-attr]
    ctx.jwt_run_end = run_end
    tm = _JWT_TAIL_RE.match(text, run_end)
    ctx.jwt_tail_end = -1 if tm is None else tm.end()
    if tm is None:
        return
    ctx.jwt_tail_marker = _has_marker(tm.group(0))
    # Markers are letters and punctuation the header has none of, so none spans
    # the "."; the header of a later start holds one if one starts after it.
    last = -1
    mm = _MARKER_RE.search(text, start, run_end)
    while mm is not None:
        last = mm.start()
        mm = _MARKER_RE.search(text, last + 1, run_end)
    ctx.jwt_last_marker = last
