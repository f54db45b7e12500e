"""Formats with their own anchor.

"A"-led ids (AWS, Google...), "~" and "|" formats, prefixes glued to the body.
"""

from __future__ import annotations

import re

from gateway.guard.detectors.secrets.common import _A, _PRIO_SPECIFIC, _Ctx
from gateway.guard.detectors.secrets.values import (
    _at,
    _char_classes,
    _clean_token,
    _entropy,
    _left_ok,
)

# ---------------------------------------------------------------------------
# "A"-led formats: AWS, Google, Bedrock, 1Password, Atlassian, age, Artifactory,
# Facebook (EAA...). All start with "A" so the search stays a literal one.
# ---------------------------------------------------------------------------

_A_RE = re.compile(
    r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9]|IzaSy|BSK|3-[A-Z0-9]|TATT|GE-SECRET-KEY-1|KCp"
    r"|[MC](?<=EAA[MC]))",
    _A,
)
_A_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    (
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", _A),
        "aws_access_key",
    ),
    (("AIza",), re.compile(r"AIzaSy[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", _A), "google_api_key"),
    (("ABSK",), re.compile(r"ABSK[A-Za-z0-9+/]{109,269}={0,2}", _A), "aws_bedrock_api_key"),
    (
        ("A3-",),
        re.compile(
            r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}"
            r"(?![A-Za-z0-9])",
            _A,
        ),
        "onepassword_token",
    ),
    (("ATATT",), re.compile(r"ATATT3[A-Za-z0-9_=-]{150,300}", _A), "atlassian_api_token"),
    (("AGE-",), re.compile(r"AGE-SECRET-KEY-1[0-9A-Z]{58}", _A), "private_key"),
    (("AKCp",), re.compile(r"AKCp[A-Za-z0-9]{69}(?![A-Za-z0-9])", _A), "artifactory_token"),
    (("EAA",), re.compile(r"EAA[MC][A-Za-z0-9]{100,1024}", _A), "facebook_token"),
)


def _on_a(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    if _at(text, "EAA", pos - 2):
        pos -= 2
    if not _left_ok(text, pos, "_"):
        return
    for leads, rx, kind in _A_RULES:
        if not text.startswith(leads, pos):
            continue
        am = rx.match(text, pos)
        if am is None:
            return
        tok = am.group(0)
        if kind == "aws_access_key":
            # AWS docs and fixtures fill ids with Z or EXAMPLE; only XXXX is a blank.
            if "XXXX" in tok:
                return
        elif not _clean_token(tok):
            return
        ctx.add(pos, am.end(), kind, _PRIO_SPECIFIC)
        return


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


# Formats whose prefix runs straight into the body, each with its own literal.
_GITLAB_RUNNER_RE = re.compile(r"GR1348941[A-Za-z0-9_-]{20,50}(?![A-Za-z0-9_-])", _A)
_DATABRICKS_RE = re.compile(r"dapi[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])", _A)
_TWILIO_RE = re.compile(r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", _A)


_DAPI_PASS_RE = re.compile(r"pi(?<=dapi)", _A)


def _on_dapi(ctx: _Ctx, m: re.Match[str]) -> None:
    dm = _DATABRICKS_RE.match(ctx.text, m.start() - 2)
    if dm is not None:
        _on_glued(ctx, dm)


def _on_glued(ctx: _Ctx, m: re.Match[str]) -> None:
    tok = m.group(0)
    body = tok[9:] if tok.startswith("GR") else tok[2:]
    if not _left_ok(ctx.text, m.start(), "_") or not _clean_token(body):
        return
    if tok.startswith("GR"):
        if _char_classes(body) >= 2:
            ctx.add(m.start(), m.end(), "gitlab_token", _PRIO_SPECIFIC)
    elif _char_classes(body) >= 2 and _entropy(body) >= 3.0:
        kind = "databricks_token" if tok.startswith("dapi") else "twilio_api_key"
        ctx.add(m.start(), m.end(), kind, _PRIO_SPECIFIC)
