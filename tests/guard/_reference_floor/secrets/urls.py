""" ":" and "=": URL credentials, webhooks, Telegram, Azure SAS, random values under plain names."""

from __future__ import annotations

import re

from tests.guard._reference_floor.secrets.common import (
    _A,
    _PRIO_CONTEXT,
    _PRIO_GENERIC,
    _PRIO_SPECIFIC,
    _Ctx,
    _words,
)
from tests.guard._reference_floor.secrets.names import _NEG_SEGMENTS, _segments
from tests.guard._reference_floor.secrets.values import (
    _HASH_PREFIX_RE,
    _PLACEHOLDER_VALUES,
    _at,
    _clean_token,
    _entropy,
    _has_marker,
    _is_placeholder,
    _is_reference,
    _is_text_b64,
    _left_ok,
    _looks_random,
)

# ---------------------------------------------------------------------------
# ":" and "=": URL credentials, webhooks, Telegram, Azure SAS, and random
# values under names that carry no keyword
# ---------------------------------------------------------------------------

# Mixed case and a digit near the start, then 32+ token characters. The
# uppercase test runs first so hex digests and UUIDs in logs fail within a few
# steps.
_HIGH_ENTROPY_AHEAD = (
    r"[ \t]{0,3}+[\"'`]?(?=[A-Za-z0-9][a-z0-9+/_~.=-]{0,7}+[A-Z])"
    r"(?=[A-Z0-9+/_~.=-]{0,15}+[a-z])(?=[A-Za-z+/_~.=-]{0,15}+[0-9])"
    r"(?=[A-Za-z0-9+/_~.=-]{32})"
)
_COLON_RE = re.compile(
    r":(?:"
    r"(?=//(?:[^\s:/?#@\"'<>\\]{0,128}:[^\s/?@\"'<>\\]{1,256}@[A-Za-z0-9\[_]"
    r"|hooks\.slack\.com/|api\.softlayer\.com/"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/|[A-Za-z0-9-]{1,60}\.webhook\.office\.com/))"
    r"|(?=AA[A-Za-z0-9_-]{33})(?<=[0-9]{8}:)"
    r"|" + _HIGH_ENTROPY_AHEAD + r")",
    _A,
)
_EQ_RE = re.compile(r"=(?:(?<=[?&]sig=)(?=[A-Za-z0-9%+/]{30})|" + _HIGH_ENTROPY_AHEAD + r")", _A)

# Prefilter probes for ":" and "=", the same conditions rearranged for speed:
# most values after them are short, so the 32 value characters are read first
# (no lookaround jump), and only then is their mix of cases and digits checked,
# from the value's start, by a lookbehind over exactly those 32 characters.
_HE_MIX = (
    r"(?<=(?=[A-Za-z0-9][a-z0-9+/_~.=-]{0,7}+[A-Z])(?=[A-Z0-9+/_~.=-]{0,15}+[a-z])"
    r"(?=[A-Za-z+/_~.=-]{0,15}+[0-9])[\s\S]{32})"
)
_HE_PROBE = (
    # No space or quote before the value, one to three spaces, or a quote.
    rf"[A-Za-z0-9][A-Za-z0-9+/_~.=-]{{31}}{_HE_MIX}"
    rf"|[ \t][ \t]{{0,2}}+[\"'`]?[A-Za-z0-9+/_~.=-]{{32}}{_HE_MIX}"
    rf"|[\"'`][A-Za-z0-9+/_~.=-]{{32}}{_HE_MIX}"
)
# Every value either probe reads starts with 30 characters of this class (up to
# four spaces or a quote, then value characters): one repeat turns short values
# away before any alternative is tried.
_VALUE_30 = r"(?=[ \t\"'`A-Za-z0-9%+/_~.=-]{30})"
_COLON_PROBE = (
    r"//(?:[^\s:/?#@\"'<>\\]{0,128}:[^\s/?@\"'<>\\]{1,256}@[A-Za-z0-9\[_]"
    r"|hooks\.slack\.com/|api\.softlayer\.com/"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/|[A-Za-z0-9-]{1,60}\.webhook\.office\.com/)"
    r"|AA[A-Za-z0-9_-]{33}(?<=[0-9]{8}:AA[A-Za-z0-9_-]{33})"
    rf"|{_VALUE_30}(?:{_HE_PROBE})"
)
_EQ_PROBE = (
    rf"{_VALUE_30}(?:[A-Za-z0-9%+/][A-Za-z0-9%+/]{{29}}(?<=[?&]sig=[A-Za-z0-9%+/]{{30}})"
    rf"|{_HE_PROBE})"
)

_URL_CRED_RE = re.compile(
    r"([A-Za-z][A-Za-z0-9+.:-]{0,30})://([^\s:/?#@\"'<>\\]{0,128}):([^\s/?@\"'<>\\]{1,256})@",
    _A,
)
_SCHEME_BACK_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.:-]{0,30}\Z", _A)
_DB_SCHEMES = _words(
    """
    postgres postgresql mysql mariadb mongodb redis rediss amqp amqps mssql sqlserver
    oracle cockroachdb clickhouse couchdb cassandra neo4j bolt memcached db2 snowflake
    jdbc:postgresql jdbc:mysql jdbc:sqlserver jdbc:oracle jdbc:mariadb ftp sftp
    """
)
_URL_PLACEHOLDER_PW = _words("password passwd pass pwd secret pw changeme token apikey")
_SLACK_HOOK_RE = re.compile(
    r"//hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"(T[A-Z0-9]{6,12}/[A-Z0-9]{6,14}/[A-Za-z0-9/]{16,120})",
    _A,
)
_SOFTLAYER_URL_RE = re.compile(
    r"//api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/([a-z0-9]{64})(?![a-z0-9])", _A
)
# Webhook URLs: whoever holds one can post as the integration.
_DISCORD_HOOK_RE = re.compile(
    r"//(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
    r"([A-Za-z0-9_-]{60,68})(?![A-Za-z0-9_-])",
    _A,
)
_TEAMS_HOOK_RE = re.compile(
    r"//[A-Za-z0-9-]{1,60}\.webhook\.office\.com/webhookb2/[0-9a-f-]{36}@[0-9a-f-]{36}/"
    r"IncomingWebhook/([0-9a-f]{32}/[0-9a-f-]{36})",
    _A,
)
_TELEGRAM_RE = re.compile(r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", _A)
_DIGITS_BACK_RE = re.compile(r"[0-9]{8,10}\Z", _A)


def _on_colon(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    if text.startswith("//", pos + 1):
        _on_url(ctx, pos)
    elif text.startswith("AA", pos + 1):
        back = _DIGITS_BACK_RE.search(text, max(0, pos - 10), pos)
        # api.telegram.org/bot<token>/sendMessage glues the token to "bot".
        if back is not None and (
            _left_ok(text, back.start(), "_") or _at(text, "bot", back.start() - 3)
        ):
            tm = _TELEGRAM_RE.match(text, back.start())
            if tm is not None and _clean_token(tm.group(0)):
                ctx.add(back.start(), tm.end(), "telegram_bot_token", _PRIO_SPECIFIC)
    else:
        _on_high_entropy(ctx, m)


def _on_url(ctx: _Ctx, pos: int) -> None:
    text = ctx.text
    if text.startswith("//hooks.slack.com/", pos + 1):
        hm = _SLACK_HOOK_RE.match(text, pos + 1)
        if hm is not None and _clean_token(hm.group(1)):
            ctx.add(hm.start(1), hm.end(1), "slack_webhook", _PRIO_SPECIFIC)
        return
    if text.startswith("//api.softlayer.com/", pos + 1):
        sm = _SOFTLAYER_URL_RE.match(text, pos + 1)
        if sm is not None and _clean_token(sm.group(1)):
            ctx.add(sm.start(1), sm.end(1), "softlayer_api_key", _PRIO_SPECIFIC)
        return
    for rx, kind in ((_DISCORD_HOOK_RE, "discord_webhook"), (_TEAMS_HOOK_RE, "teams_webhook")):
        wm = rx.match(text, pos + 1)
        if wm is not None:
            if _clean_token(wm.group(1)):
                ctx.add(wm.start(1), wm.end(1), kind, _PRIO_SPECIFIC)
            return
    back = _SCHEME_BACK_RE.search(text, max(0, pos - 31), pos)
    if back is None:
        return
    um = _URL_CRED_RE.match(text, back.start())
    if um is None or not _credential_ok(um.group(2), um.group(3)):
        return
    scheme = um.group(1).lower()
    db = scheme in _DB_SCHEMES or scheme.split("+", 1)[0] in _DB_SCHEMES
    kind = "db_connection_string" if db else "url_credentials"
    ctx.add(um.start(3), um.end(3), kind, _PRIO_CONTEXT)


_BRACED_RE = re.compile(r"\{([^{}$%\s]{1,256})\}", _A)


def _credential_ok(user: str, pw: str) -> bool:
    """A user:password pair holds a real password, not a template or a blank."""
    braced = _BRACED_RE.fullmatch(pw)
    p = braced.group(1) if braced is not None else pw
    if len(p) < 6 or p == user or p.lower() in _URL_PLACEHOLDER_PW or len(set(p)) < 3:
        return False
    if "%20" in p or "," in p:
        return False  # a sentence or a multi-host list, not a password
    if _is_reference(p, quoted=True) or _has_marker(p):
        return False
    return not (p.lower() in _PLACEHOLDER_VALUES and user.lower() in _PLACEHOLDER_VALUES)


_KEYWORD_RE = re.compile(r"pass|pw|psw|pasw|secret|token|key|auth|cred|login", re.I | _A)
# The same words for text already lowercased: a literal-led search, several
# times faster than a case-insensitive one on the short keys of JSON objects.
_KEYWORD_LOW_RE = re.compile(_KEYWORD_RE.pattern)


# Names of content hashes written as "<name>:<base64>" (Go modules) or "<name>=".
_HASH_NAMES = _words("h1 sha1 sha224 sha256 sha384 sha512 md5 blake2b blake3 xxh3 xxh64")
_HE_VALUE_RE = re.compile(r"[A-Za-z0-9+/_~.=-]{32,200}", _A)
_SAS_RE = re.compile(r"[A-Za-z0-9%+/]{30,200}(?:%3D|=){0,2}", _A)
_NAME_BACK_RE = re.compile(r"[A-Za-z0-9_.-]{0,64}\Z", _A)


def _on_eq(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    if _at(text, "sig=", pos - 3) and pos >= 4 and text[pos - 4] in "?&":
        sm = _SAS_RE.match(text, pos + 1)
        if sm is not None and _sas_query(ctx, pos):
            ctx.add(sm.start(), sm.end(), "azure_sas_token", _PRIO_SPECIFIC)
        return
    _on_high_entropy(ctx, m)


_SAS_FIELD_RE = re.compile(r"s[vep]=", _A)


def _sas_query(ctx: _Ctx, pos: int) -> bool:
    """The query before "sig=" (from its "?", 2 KB back at most) has sv=, se= or sp=.

    A query with many "&sig=" is read once: the "?" found for the one before
    still holds when no "?" came since, and only the new part is read.
    """
    text = ctx.text
    lo = max(0, pos - 2048)
    q0 = text.rfind("?", max(lo, ctx.sas_read), pos)
    if q0 >= 0:
        ctx.sas_query, ctx.sas_read, ctx.sas_fields = q0, q0, False
    elif ctx.sas_query < lo:
        ctx.sas_query, ctx.sas_read, ctx.sas_fields = -1, pos, False
        return False
    if not ctx.sas_fields:
        # Two characters of overlap: a field cut at the last read position.
        from_ = max(ctx.sas_query, ctx.sas_read - 2)
        ctx.sas_fields = _SAS_FIELD_RE.search(text, from_, pos) is not None
    ctx.sas_read = pos
    return ctx.sas_fields


def _on_high_entropy(ctx: _Ctx, m: re.Match[str]) -> None:
    """A long random value under a name that is neither a keyword nor metadata."""
    text = ctx.text
    vm = _HE_VALUE_RE.match(text, m.end())
    if vm is None:
        return
    v = vm.group(0).rstrip(".")
    vs, ve = vm.start(), vm.start() + len(v)
    if ve < len(text) and text[ve].isascii() and text[ve].isalnum():
        return
    i = m.start()
    while i > 0 and text[i - 1] in " \t\"'`]":
        i -= 1
    nm = _NAME_BACK_RE.search(text, max(0, i - 64), i)
    j = nm.start() if nm is not None else i
    if j > 0 and text[j - 1] in "?&;":
        return  # URL query parameters: state, code, signatures
    name = text[j:i]
    if name and (
        not _NEG_SEGMENTS.isdisjoint(_segments(name)) or _KEYWORD_RE.search(name) is not None
    ):
        return  # keyword names are judged by the keyword passes
    if name.lower() in _HASH_NAMES:
        return  # go.sum "h1:<base64>", "sha512-..." integrity: content hashes
    if (
        _HASH_PREFIX_RE.match(v)
        or "=" in v.rstrip("=")
        or v.startswith("/")
        or v.count("/") > 2
        or v.count(".") > 2
        or _is_placeholder(v)
        or not _looks_random(v, 32)
        or _entropy(v) < 4.0
        or _is_text_b64(v)
    ):
        return
    ctx.add(vs, ve, "high_entropy_token", _PRIO_GENERIC)
