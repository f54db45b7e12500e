"""The value after a key name: where it ends, and whether it is a credential."""

from __future__ import annotations

import re

from tests.guard._reference_floor.secrets.common import _A, _words
from tests.guard._reference_floor.secrets.names import _BARE_PW, _PW, _STRONG, _WEAK
from tests.guard._reference_floor.secrets.values import (
    _HASH_PREFIX_RE,
    _HEX_RE,
    _LONG_VALUE,
    _REF_PREFIXES,
    _SHORT_VALUE,
    _SLUG_RE,
    _UUID_RE,
    _WS_RE,
    _char_classes,
    _entropy,
    _has_digit,
    _has_name_parts,
    _is_identifier_like,
    _is_placeholder,
    _is_reference,
    _is_wordy,
    _looks_random,
)

_VALUE_RE = re.compile(
    (
        r"[ \t]{0,8}(?:[fbrFBRuU@](?=[\"']))?(?:"
        r"\\\"((?:[^\\\n]|\\(?!\")){0,N})\\\""
        r"|\\'((?:[^\\\n]|\\(?!')){0,N})\\'"
        r"|\"((?:[^\"\\\n]|\\.){0,N})\""
        r"|'((?:[^'\\\n]|\\.){0,N})'"
        r"|`([^`\n]{0,N})`"
        r"|([^\s\"'`,;<|]{1,N1})"
        r")"
    )
    .replace("N}", f"{_LONG_VALUE}}}")
    .replace("N1}", f"{_LONG_VALUE + 1}}}"),
    _A,
)
# Escaped line breaks and tabs: text of several lines, not one secret.
_ESCAPED_WS_RE = re.compile(r"\\[nrt]", _A)
_ANNOT_RE = re.compile(r"[ \t]{0,3}(?:\[[^\]\n]{0,40}\])?[ \t]{0,3}=(?!=)", _A)
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSER_RE = re.compile(r"[)\]}]")
_BRACKET_RE = re.compile(r"[()\[\]{}]")
_AWS_SECRET_RE = re.compile(r"[A-Za-z0-9/+]{40}", _A)
_AUTH_SCHEMES = _words(
    "bearer basic token bot digest apikey api-token sso-key ssws key otoken negotiate"
)
# Signature schemes: the header carries a per-request HMAC, not a reusable secret.
_SIGNED_SCHEMES = _words("aws4-hmac-sha256 hmac-sha256 signature")


def _read_value(text: str, i: int) -> tuple[int, int, bool] | None:
    """The value at text[i]: a quoted string (escaped or not) or a bare token."""
    m = _VALUE_RE.match(text, i)
    if m is None or m.lastindex is None:
        return None
    g = m.lastindex
    if g != 6:
        return m.start(g), m.end(g), True
    # A bare value ends at the first bracket it did not open: f(password=x), {"k": v}.
    vs, ve = m.start(g), m.end(g)
    if _CLOSER_RE.search(text, vs, ve) is not None:
        depth = {")": 0, "]": 0, "}": 0}
        for bm in _BRACKET_RE.finditer(text, vs, ve):
            c = bm.group()
            if c in _OPENERS:
                depth[_OPENERS[c]] += 1
            elif depth[c] == 0:
                ve = bm.start()
                break
            else:
                depth[c] -= 1
    while ve > vs and text[ve - 1] == ">":
        ve -= 1  # <td>x</td>
    return (vs, ve, False) if ve > vs else None


def _value_ok(v: str, cls: int, quoted: bool, bare_key: bool = False) -> bool:
    n = len(v)
    if n < (6 if cls in (_PW, _BARE_PW) else 8) or _WS_RE.search(v) is not None:
        return False
    if n > _SHORT_VALUE and (
        n > _LONG_VALUE or cls == _WEAK or _ESCAPED_WS_RE.search(v) is not None
    ):
        return False
    if cls == _WEAK:
        # Weak names ("*_key", "auth", "login") need a value that is clearly
        # random; short hex under such names is usually an id or a digest, and
        # a UUID under a bare "key" is an object or cache key.
        if _UUID_RE.fullmatch(v) is not None:
            if bare_key:
                return False
        elif not _looks_random(v) or (n < 32 and _HEX_RE.fullmatch(v) is not None):
            return False
    if v.startswith(("/", "./", "~/", "..", *_REF_PREFIXES)) or "://" in v or v in ("|-", ">-"):
        return False  # paths, URLs, and the cheapest part of _is_reference
    if _HASH_PREFIX_RE.match(v) is not None or _is_placeholder(v) or _is_reference(v, quoted):
        return False
    if n > _SHORT_VALUE:
        # Pasted whole (a key or certificate as base64, a session token): judged by
        # its characters; the word and name tests below are for short values, and
        # kilobytes of random characters hold a word or a name by chance.
        return _char_classes(v) >= 2 and _entropy(v) >= 3.5 and _SLUG_RE.fullmatch(v) is None
    if cls == _PW:
        return not _is_wordy(v) and not (_SLUG_RE.fullmatch(v) and not _has_digit(v))
    if cls == _BARE_PW:
        # "pass:" and "pwd:" are also English and shell words; ask for more than letters.
        return not v.isalpha() and not _is_wordy(v) and not _SLUG_RE.fullmatch(v)
    if cls == _STRONG:
        if _is_wordy(v) or (_SLUG_RE.fullmatch(v) and _UUID_RE.fullmatch(v) is None):
            return False
        if (v.isalpha() and _is_identifier_like(v)) or (
            _UUID_RE.fullmatch(v) is None and _has_name_parts(v)
        ):
            return False  # "client_secret: Configuration options", "serverlessrepo:applicationId"
        return _char_classes(v) >= 2 or n >= 16
    return True
