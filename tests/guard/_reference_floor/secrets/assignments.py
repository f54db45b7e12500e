"""Key/value assignments in code, config, env files, headers, CLI flags and prose."""

from __future__ import annotations

import base64
import binascii
import re

from tests.guard._reference_floor.secrets.assigned_values import (
    _ANNOT_RE,
    _AUTH_SCHEMES,
    _AWS_SECRET_RE,
    _SIGNED_SCHEMES,
    _read_value,
    _value_ok,
)
from tests.guard._reference_floor.secrets.common import (
    _A,
    _PRIO_CONTEXT,
    _PRIO_GENERIC,
    _PRIO_SPECIFIC,
    _Ctx,
)
from tests.guard._reference_floor.secrets.kubernetes import _k8s_secret
from tests.guard._reference_floor.secrets.names import (
    _BARE_PW,
    _CLASS_KIND,
    _PW,
    _STRONG,
    _WEAK,
    _classify,
    _is_setter,
    _segments,
)
from tests.guard._reference_floor.secrets.urls import _credential_ok
from tests.guard._reference_floor.secrets.values import (
    _CALL_RE,
    _HEX_RE,
    _IDENT_RE,
    _LONG_VALUE,
    _PLACEHOLDER_VALUES,
    _UUID_RE,
    _at,
    _char_classes,
    _clean_token,
    _has_digit,
    _has_marker,
    _is_placeholder,
    _is_reference,
    _is_wordy,
    _looks_random,
)


def _emit_assignment(ctx: _Ctx, name: str, cls: int, vs: int, ve: int, quoted: bool) -> None:
    text = ctx.text
    v = text[vs:ve]
    low = name.lower()
    if low.endswith("authorization"):
        _emit_auth_header(ctx, vs, ve, quoted)
        return
    if v.lower() == low or v.lower() in _segments(name):
        return  # "lowpass": "lowpass", an enum echoing its own name
    if low == "auth" and _basic_ok(v):
        # Docker config.json: base64 of user:password
        ctx.add(vs, ve, "basic_auth", _PRIO_CONTEXT)
        return
    flat = low.replace("_", "").replace("-", "")
    if ("aws" in flat or flat.endswith("secretaccesskey")) and _AWS_SECRET_RE.fullmatch(v):
        # Like AKIA...EXAMPLE ids, the documented example secret counts: the
        # reference floor denies it, and it is indistinguishable in shape.
        if _clean_token(v) and _char_classes(v) >= 3:
            ctx.add(vs, ve, "aws_secret_access_key", _PRIO_CONTEXT)
        return
    if not _value_ok(v, cls, quoted, low == "key"):
        return
    kind = _CLASS_KIND[cls]
    if flat.endswith("accountkey") and len(v) >= 40:
        kind = "azure_storage_key"
    elif flat.endswith("sharedaccesskey") and len(v) >= 30:
        kind = "azure_shared_access_key"
    elif flat.endswith("authtoken") and _at(text, "/:", vs - len(name) - 3):
        kind = "npm_token"
    elif cls in (_PW, _BARE_PW):
        line = text[_line_start(text, vs) : vs].lower()
        if any(k in line for k in ("server=", "data source=", "database=", "host=")):
            kind = "db_connection_string"
    ctx.add(vs, ve, kind, _PRIO_GENERIC if cls == _WEAK else _PRIO_CONTEXT)


# How far back a rule looks for the start of the line it is on: enough for the
# keys of a connection string or a .netrc entry, and a bound on hostile lines.
_LINE_BACK = 256


def _line_start(text: str, pos: int) -> int:
    lo = max(0, pos - _LINE_BACK)
    return text.rfind("\n", lo, pos) + 1 or lo


def _emit_auth_header(ctx: _Ctx, vs: int, ve: int, quoted: bool) -> None:
    """Authorization: <scheme> <credentials>, or a bare credential.

    Quoted, the scheme and the credentials are one string ("Bearer <token>").
    """
    text = ctx.text
    v = text[vs:ve]
    scheme = v.lower()
    head, space, rest = scheme.partition(" ")
    if quoted and space and head in _AUTH_SCHEMES and rest.strip(" "):
        scheme = head
        ts, te = ve - len(rest.lstrip(" ")), ve
    else:
        if scheme in _SIGNED_SCHEMES:
            return
        if scheme not in _AUTH_SCHEMES:
            if _value_ok(v, _STRONG, quoted):
                ctx.add(vs, ve, "bearer_token", _PRIO_CONTEXT)
            return
        if not text.startswith((" ", "\t"), ve):
            return
        tv = _read_value(text, ve)
        if tv is None:
            return
        ts, te, _ = tv
    tok = text[ts:te]
    if scheme == "basic":
        if _basic_ok(tok, header=True):
            ctx.add(ts, te, "basic_auth", _PRIO_CONTEXT)
    elif _value_ok(tok, _STRONG, True) or (
        len(tok) >= 16 and _HEX_RE.fullmatch(tok) is not None and not _is_placeholder(tok)
    ):
        ctx.add(ts, te, "bearer_token", _PRIO_CONTEXT)


def _basic_ok(tok: str, header: bool = False) -> bool:
    """Base64 user:password of HTTP Basic auth with a real password.

    In an Authorization header any long random value counts; elsewhere (Docker
    "auth" fields) it must decode to user:password.
    """
    if len(tok) < 8 or _has_marker(tok) or _is_reference(tok, True):
        return False
    try:
        raw = base64.b64decode(tok + "=" * (-len(tok) % 4), validate=True)
    except (binascii.Error, ValueError):
        return len(tok) >= 20 and _looks_random(tok)
    decoded = raw.decode("latin-1")
    if not decoded.isprintable():
        return header and len(tok) >= 16 and _looks_random(tok)
    user, sep, pw = decoded.partition(":")
    if not sep:
        return False
    if not pw:
        return bool(user) and user.lower() not in _PLACEHOLDER_VALUES
    return _credential_ok(user, pw)


def _pw_like(v: str) -> bool:
    return (
        len(v) >= 6 and not _is_placeholder(v) and not _is_reference(v, True) and not _is_wordy(v)
    )


# ---------------------------------------------------------------------------
# Key-name keywords, in either case
# ---------------------------------------------------------------------------

# After the keyword: the rest of the name, then one assignment form. Groups:
# 1 rest of name, 2 operator, 3 ("name", "value"), 4 <name>value</name>,
# 5 key="..." value="...", 6 name("value"), 7 name/value pairs (Kubernetes env,
# CloudFormation), 8 "kind: Secret" at the end of a line, 9 a space: .netrc
# "password X" and "sshpass -p X" (prose hits here are dropped in Python).
# The rules are written lowercase and searched for in an ASCII-lowercased copy
# of long texts, where every non-ASCII character reads as "?", while handlers
# match them in the text itself (case-insensitively); "(?:\?|[^\x00-\x7f])="
# gives the one operator containing "?" the same meaning in both.
_KW_TAIL = (
    # Possessive: the name never gives characters back, so a failed tail costs
    # one attempt per keyword instead of one per name length.
    r"([a-z0-9_.\-]{0,40}+)"
    r"(?:"
    r"([\\\"'\]`]{0,3}[ \t]{0,24}+(?:=>|:=|::=|:::=|(?:\?|[^\x00-\x7f])=|!==?|===?|=|:|<-)"
    r"[ \t]{0,4})"
    # A value of 6+ characters follows; "ns:id" lookup keys (cache "session:...") do not.
    r"(?=[fbru@]?[\\\"'`]{0,2}(?:[^\s\"'`,;:]{6}(?![^\s\"'`,;:]{0,3}:)"
    r"|(?:basic|token|bot|key|ssws)[ \t]))"
    r"|([\\\"'`],[ \t]{0,2})(?=[\"'`])"
    r"|(>)(?=[^<\s])"
    r"|([\"'][ \t]{1,4}value[ \t]{0,2}=[ \t]{0,2})"
    r"|(\([ \t]{0,3})(?=[\"'`])"
    r"|([\"']?[ \t]{0,4},?\s{0,8}[\"']?value[\"']?[ \t]{0,3}[:=][ \t]{0,3})"
    r"|([\"']?[ \t]*+(?=\r?\n|\Z))"
)


def _kw(head: str, extra: str = "") -> tuple[str, str]:
    """A keyword rule: its lowercase head and the rest of its pattern."""
    return head, "(?i:" + _KW_TAIL + extra + "))"


# "my password is X", "the token is X": what people type into a chat.
_PROSE_TAIL = r"|([ \t]{1,4}(?:is|was)[ \t]{1,4})(?=[^\s=:\-])"

# Each rule is anchored on the first letter of its head, in either case, and
# starts with letters a search can look for as one literal in a lowercased
# copy: "ke" finds token and key, "cre" secret and cred(entials).
_KW_K = _kw("ke(?:y|n(?<=token))", _PROSE_TAIL)
_KW_C = _kw("cre(?:t(?<=secret)|d)", _PROSE_TAIL)
_KW_P = _kw(
    "p(?:ass|w|swd|asw)", r"|([ \t]{1,4}(?:(?:is|was)[ \t]{1,4}|-p[ \t]{0,2})?)(?=[^\s=:\-])"
)
# "Authorization" then spaces and a scheme: nginx proxy_set_header, Apache
# RequestHeader set, HAProxy http-request set-header.
_KW_U = _kw("uth(?<=auth)", r"|([ \t]{1,4})(?=[\"']?(?:basic|bearer|token|digest)[ \t])")
_KW_G = _kw("gin(?<=login)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PATH_LEAD = _NAME_CHARS | frozenset(":*}])")
_NAME_KEY_RE = re.compile(r"[nN](?i:ame)[\"']?[ \t]*[:=][ \t]*[\"']?\Z", _A)
_K8S_KIND_LINE_RE = re.compile(r"[ \t]*(?i:kind):[ \t]*[\"']?(?i:secret)[\"']?[ \t]*\r?\Z", _A)


def _is_word(s: str, word: str) -> bool:
    """``s`` is ``word`` in any ASCII case (str.lower maps a few non-ASCII letters to ASCII)."""
    return len(s) == len(word) and s.isascii() and s.lower() == word


# password.equals("x") compares against a literal, as password == "x" does.
_EQUALS = (".equals", ".equalsignorecase", ".contentequals")


def _on_keyword(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    name_start = m.start()
    lo = max(0, name_start - 64)
    while name_start > lo and text[name_start - 1] in _NAME_CHARS:
        name_start -= 1
    if name_start in ctx.seen or name_start < ctx.value_end:
        return
    ctx.seen.add(name_start)
    form = m.lastindex or 0
    if form == 8:
        line_start = text.rfind("\n", 0, name_start) + 1
        if _K8S_KIND_LINE_RE.match(text, line_start, m.end()) is not None:
            _k8s_secret(ctx, line_start)
        return
    prose = form == 9 and m.group(9).strip(" \t").lower() in ("is", "was")
    spaced_header = form == 9 and text[name_start : m.end(1)].lower().endswith("authorization")
    if form == 9 and not (prose or spaced_header) and not _spaced_credential(text, name_start, m):
        return
    name = text[name_start : m.end(1)].strip(".-")
    compared = form == 6 and name.lower().endswith(_EQUALS)
    if compared:
        name = name.rsplit(".", 1)[0]
    if not name:
        return
    before = text[name_start - 1] if name_start else ""
    if before == " " and _DOC_PARAM_RE.search(text, max(0, name_start - 40), name_start):
        return  # ":param password: the password to use" documents, not assigns
    if before == ":" and name_start > 1 and text[name_start - 2] in _PATH_LEAD:
        return  # AWS::ApiGateway::ApiKey, arn:...:secret:name (not a Ruby :symbol)
    if name.lower() == "private_key_id":
        _gcp_key_id(ctx, m.end())
        return
    cls = _classify(name)
    if cls == 0:
        return
    if prose and cls == _PW:
        cls = _BARE_PW  # "the password is correct": prose needs a value with digits or symbols
    op_end = m.end()
    if form == 3 and (before not in "\"'`" or cls == _WEAK):
        return  # ("api_token", "value") needs a quoted, clearly secret name
    if (
        form == 7
        and before not in "\"'`"
        and not _NAME_KEY_RE.search(text, max(0, name_start - 12), name_start)
    ):
        return  # "token, value = ..." is a tuple, not a name/value pair
    if form == 4:
        if before == "<":
            end = text.find("<", op_end, op_end + _LONG_VALUE + 1)
            if end > op_end:
                _emit_assignment(ctx, name, cls, op_end, end, True)
        return
    if form == 6 and not (compared or _is_setter(name)):
        return  # get_secret("name"), hash_password(...): calls, not values
    rv = _read_value(text, op_end)
    if rv is None:
        return
    vs, ve, quoted = rv
    ctx.value_end = ve
    if not quoted and _CALL_RE.match(text, vs, ve) is not None:
        return  # token = tokenizer.encode(text): code, the common case in source files
    if prose and not quoted:
        while ve > vs and text[ve - 1] in ".,!?;":
            ve -= 1  # the end of the sentence, not of the password
    if not quoted and before in "?&":
        amp = text.find("&", vs, ve)
        ve = ve if amp < 0 else amp  # ?user=x&password=y&next=...
    if not quoted and _IDENT_RE.fullmatch(text, vs, ve) is not None:
        # password: str = "hunter2" (an annotation, then the value)
        am = _ANNOT_RE.match(text, ve)
        if am is not None:
            rv = _read_value(text, am.end())
            if rv is None:
                return
            vs, ve, quoted = rv
    v = text[vs:ve]
    if not quoted:
        op = text[m.start(2) : m.end(2)].strip(" \t") if form == 2 else ""
        if op.startswith(("==", "!=")):
            return  # comparisons against variables
        if op != ":" and _IDENT_RE.fullmatch(v) is not None and not _has_digit(v):
            return  # token = Whitespace: a name in code, not a value
    # ("api_token", "value") needs a random value; a password name any password:
    # define('DB_PASSWORD', 'x') in PHP, ("password", "x") pairs.
    if form == 3 and not (quoted and (cls == _PW or _looks_random(v, 12) or _UUID_RE.fullmatch(v))):
        return
    _emit_assignment(ctx, name, cls, vs, ve, quoted)


# Case-insensitive patterns searched in a window start with a literal or a class:
# a leading "(?i:...)" would leave re without a first-character filter.
_DOC_PARAM_RE = re.compile(
    r"(?::(?i:param|type|arg|keyword)|@(?i:param))[ \t]+(?:[\w\[\], |]{1,30} )?\Z", _A
)
_DEFINE_RE = re.compile(r"[ \t]{0,8}[#%][ \t]{0,4}(?i:define)[ \t]{1,8}\Z", _A)
_SQL_ROLE_RE = re.compile(r"[cCaA](?i:reate|lter)[ \t]{1,4}(?i:user|role|login)[ \t]", _A)
_NETRC_LINE_RE = re.compile(
    r"[mMdD](?<![a-zA-Z0-9_].)(?:(?<=[mM])(?i:achine)|(?<=[dD])(?i:efault))[ \t]", _A
)


def _spaced_credential(text: str, name_start: int, m: re.Match[str]) -> bool:
    """'password' followed by a space is prose, except in .netrc, sshpass -p,
    C and RPM macros (#define DB_PASS "x", %define db_password x) and SQL
    (ALTER ROLE app WITH PASSWORD 'x')."""
    end = m.end(1)
    if "-p" in m.group(9).lower():
        return _is_word(text[max(0, end - 7) : end], "sshpass")
    line_start = _line_start(text, name_start)
    if _DEFINE_RE.match(text, line_start, name_start) is not None:
        return True
    if not _is_word(text[name_start:end], "password"):
        return False
    if _NETRC_LINE_RE.search(text, line_start, name_start) is not None:
        return True
    return (
        text.startswith(("'", '"'), m.end())
        and _SQL_ROLE_RE.search(text, line_start, name_start) is not None
    )


def _gcp_key_id(ctx: _Ctx, pos: int) -> None:
    rv = _read_value(ctx.text, pos)
    if rv is None:
        return
    if ctx.service_account is None:
        ctx.service_account = "service_account" in ctx.text
    if not ctx.service_account:
        return
    vs, ve, _ = rv
    if ve - vs == 40 and _HEX_RE.fullmatch(ctx.text, vs, ve) is not None:
        ctx.add(vs, ve, "gcp_service_account", _PRIO_SPECIFIC)


_CLI_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,50}", _A)


def _on_cli(ctx: _Ctx, pos: int) -> None:
    """--password VALUE, --api-key=VALUE"""
    text = ctx.text
    nm = _CLI_NAME_RE.match(text, pos)
    if nm is None or not text.startswith(("=", " ", "\t"), nm.end()):
        return
    cls = _classify(nm.group(0))
    if cls == 0:
        return
    rv = _read_value(text, nm.end() + 1)
    if rv is not None and not text.startswith("-", rv[0]):
        vs, ve, quoted = rv
        _emit_assignment(ctx, nm.group(0), cls, vs, ve, quoted)
