"""Prefixed token formats (``ghp_``, ``sk-``, ``ya29.``...), found at their separator.

The formats themselves are data: ``rules.yaml``, entries with ``prefixes``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.guard._reference_floor.secrets.assignments import _on_cli
from tests.guard._reference_floor.secrets.bundler import _on_bundle
from tests.guard._reference_floor.secrets.common import _A, _PRIO_SPECIFIC, _Ctx
from tests.guard._reference_floor.secrets.rules import RULES
from tests.guard._reference_floor.secrets.values import (
    _at,
    _char_classes,
    _clean_token,
    _entropy,
    _has_digit,
    _is_wordy,
    _left_ok,
)

# ---------------------------------------------------------------------------
# Prefixed token formats, found at their separator
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    body: re.Pattern[str]
    # Some formats legitimately contain long digit runs ("xoxa-511111111-...").
    runs: bool
    wordy: bool
    min_classes: int
    entropy: float


def _from_rules() -> dict[str, _Rule]:
    out: dict[str, _Rule] = {}
    for r in RULES:
        # eyJ (base64 JSON) bodies read like words to the wordy test; skip it there.
        rule = _Rule(
            r.kind,
            r.pattern,
            r.runs,
            not r.pattern.pattern.startswith("eyJ"),
            r.min_classes,
            r.entropy,
        )
        out.update(dict.fromkeys(r.prefixes, rule))
    return out


_PREFIX_RULES: dict[str, _Rule] = _from_rules()

# Not a token format, but found by the same pass: Bundler host credentials
# (BUNDLE_GEMS__EXAMPLE__COM=user:password).
_BUNDLE_PREFIX = "BUNDLE_"

_CLI_FLAG = r"(?<=--)(?=[A-Za-z0-9][A-Za-z0-9_-]{0,30}(?i:pass|pw|secret|token|key|auth|cred))"
_MAILCHIMP_TAIL = r"(?=us[0-9])(?<=[0-9a-f]{32}-)"
_DISCORD_MID = r"(?=[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27})(?<=[A-Za-z0-9_-]{23}\.)"
_ATLAS_MID = r"(?<=\.atlasv1\.)"


def _sep_pattern(sep: str, *extra: str) -> re.Pattern[str]:
    """One pass per separator: prefixes behind it are tested by fixed-width lookbehinds.

    The group that matches captures the prefix. Every body starts with at least ten
    token characters; testing that first keeps the lookbehinds away from ordinary
    snake_case, kebab-case and sentence ends.
    """
    prefixes = [p for p in _PREFIX_RULES if p.endswith(sep)]
    if sep == "_":
        prefixes.append(_BUNDLE_PREFIX)
    by_len: dict[int, list[str]] = {}
    for p in prefixes:
        by_len.setdefault(len(p), []).append(re.escape(p))
    behind = "|".join(
        f"(?<=({'|'.join(sorted(v))}))" for _, v in sorted(by_len.items(), reverse=True)
    )
    # The last character of some prefix must precede the separator (one cheap
    # test that turns away most UUID and kebab-case dashes).
    last = re.escape("".join(sorted({p[-2] for p in prefixes})))
    head = rf"(?<=[{last}].)(?=[A-Za-z0-9+/][A-Za-z0-9+/=_-]{{9}})(?:{behind})"
    if sep == "-":
        # UUIDs and hex ids are the commonest dashes in logs: 4 or 12 hex digits.
        head = r"(?!(?<=[0-9a-fA-F]{4}-)(?:[0-9a-fA-F]{4}-|[0-9a-fA-F]{12}(?![A-Za-z0-9])))" + head
    return re.compile(re.escape(sep) + "(?:" + "|".join([head, *extra]) + ")", _A)


_UNDER_RE = _sep_pattern("_")
_DASH_RE = _sep_pattern("-", _MAILCHIMP_TAIL, _CLI_FLAG)
_DOT_RE = _sep_pattern(".", _ATLAS_MID, _DISCORD_MID)


def _prefix_behind(sep: str) -> str:
    """A lookbehind, ten body characters after ``sep``: some known prefix ends at it.

    The two characters before the separator are laid out as a trie on the first
    of them (re skips a branch whose leading literal differs without entering
    it), each pair followed by its full prefixes.
    """
    stems: dict[str, dict[str, set[str]]] = {}
    for prefix in _PREFIX_RULES:
        if prefix.endswith(sep):
            stem = prefix[:-1]
            stems.setdefault(stem[-2], {}).setdefault(stem[-1], set()).add(stem)
    if sep == "_":
        stem = _BUNDLE_PREFIX[:-1]
        stems.setdefault(stem[-2], {}).setdefault(stem[-1], set()).add(stem)
    trie: list[str] = []
    for first, seconds in sorted(stems.items()):
        branches: list[str] = []
        for second, words in sorted(seconds.items()):
            full = ""
            if all(len(w) > 2 for w in words):
                by_len: dict[int, list[str]] = {}
                for w in sorted(words):
                    by_len.setdefault(len(w), []).append(re.escape(w))
                full = "(?:" + "|".join(f"(?<={'|'.join(v)})" for v in by_len.values()) + ")"
            branches.append(re.escape(second) + full)
        trie.append(re.escape(first) + "(?:" + "|".join(branches) + ")")
    return rf"(?<=(?:{'|'.join(trie)}){re.escape(sep)}[\s\S]{{10}})"


# What the prefilter tests after each separator: together at least everything
# the pass pattern matches (the dash pattern's UUID test is left to it), laid
# out for the way re rejects, since separators are the commonest anchors in
# code and logs. Every sre operation costs about as much as a hundred or more
# machine instructions, so the body characters come first: one repeat with no
# lookaround, which most identifier parts, dates and numbers fail.
_BODY_HEAD = r"[A-Za-z0-9+/][A-Za-z0-9+/=_-]{9}"
_UNDER_PROBE = _BODY_HEAD + _prefix_behind("_")
_DASH_PROBE = (
    _BODY_HEAD
    + _prefix_behind("-")
    + r"|us[0-9](?<=[0-9a-f]{32}-us[0-9])"
    + r"|[A-Za-z0-9](?<=--.)[A-Za-z0-9_-]{0,30}(?i:pass|pw|secret|token|key|auth|cred)"
)
# After a dot the prefix body and the middle part of a Discord token share
# their first six characters, read once.
_DOT_PROBE = (
    r"[A-Za-z0-9+/=_-]{6}(?:"
    + r"[A-Za-z0-9+/=_-]{4}(?<=\.[A-Za-z0-9+/][\s\S]{9})"
    + _prefix_behind(".")
    + r"|\.(?<=[A-Za-z0-9_-]{23}\.[A-Za-z0-9_-]{6}\.)[A-Za-z0-9_-]{27})"
    + r"|(?<=\.atlasv1\.)"
)


def _slack_ok(body: str) -> bool:
    # Real tokens end in a long random segment: xoxb-<team>-<bot>-<secret>.
    return (
        len(body) >= 14
        and len(body.rsplit("-", 1)[-1]) >= 10
        and _has_digit(body)
        and not body.isdigit()
    )


def _openai_kind(body: str, after: str) -> str | None:
    if body.startswith("ant-"):
        return "anthropic_api_key"
    if body.startswith("or-"):
        return "openrouter_api_key"
    # Lowercase kebab-case ("sk-learn-feature-flags") and FIDO key types
    # ("sk-ecdsa-sha2-nistp256@openssh.com") are names, not keys.
    if after == "@" or (body.islower() and body.count("-") >= 2):
        return None
    return "openai_api_key"


def _on_prefix(ctx: _Ctx, m: re.Match[str]) -> None:
    prefix = m.group(m.lastindex or 0)
    text = ctx.text
    start = m.end() - len(prefix)
    if prefix == _BUNDLE_PREFIX:
        _on_bundle(ctx, start)
        return
    rule = _PREFIX_RULES[prefix]
    if prefix.startswith("xox") and _at(text, "xoxe.", start - 5):
        start -= 5
    if not _left_ok(text, start, "_.-"):
        return
    bm = rule.body.match(text, m.end())
    if bm is None:
        return
    body = bm.group(0)
    if not _clean_token(body, rule.runs) or (rule.wordy and _is_wordy(body)):
        return
    if _char_classes(body) < rule.min_classes or (rule.entropy and _entropy(body) < rule.entropy):
        return
    kind = rule.kind
    if kind == "slack_token" and prefix != "xapp-" and not _slack_ok(body):
        return
    if prefix == "sk-":
        k = _openai_kind(body, text[bm.end() : bm.end() + 1])
        if k is None:
            return
        kind = k
    ctx.add(start, bm.end(), kind, _PRIO_SPECIFIC)


_MAILCHIMP_RE = re.compile(r"[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])", _A)


def _on_dash(ctx: _Ctx, m: re.Match[str]) -> None:
    if m.lastindex is not None:
        _on_prefix(ctx, m)
        return
    text = ctx.text
    pos = m.start()
    if _at(text, "-", pos - 1):
        _on_cli(ctx, pos + 1)
        return
    start = pos - 32
    if start >= 0 and _left_ok(text, start, "_-"):
        mm = _MAILCHIMP_RE.match(text, start)
        if mm is not None and _clean_token(mm.group(0)):
            ctx.add(start, mm.end(), "mailchimp_api_key", _PRIO_SPECIFIC)


_TERRAFORM_RE = re.compile(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,100}", _A)
_DISCORD_RE = re.compile(
    r"[A-Za-z0-9_-]{23,26}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])", _A
)
_TOKEN_BACK_RE = re.compile(r"[A-Za-z0-9_-]{1,26}\Z", _A)


def _on_dot(ctx: _Ctx, m: re.Match[str]) -> None:
    if m.lastindex is not None:
        _on_prefix(ctx, m)
        return
    text = ctx.text
    pos = m.start()
    if _at(text, ".atlasv1.", pos - 8):
        start = pos - 22
        if start >= 0 and _left_ok(text, start):
            tm = _TERRAFORM_RE.match(text, start)
            if tm is not None and _clean_token(tm.group(0)):
                ctx.add(start, tm.end(), "terraform_token", _PRIO_SPECIFIC)
        return
    # Discord bot token: <user id, base64>.<timestamp>.<hmac>
    back = _TOKEN_BACK_RE.search(text, max(0, pos - 27), pos)
    if back is None or not 23 <= pos - back.start() <= 26:
        return
    start = back.start()
    if not _left_ok(text, start, "_-."):
        return
    dm = _DISCORD_RE.match(text, start)
    if dm is None:
        return
    tok = dm.group(0)
    first, last = tok.split(".", 1)[0], tok.rsplit(".", 1)[1]
    if (
        _char_classes(first) >= 2
        and _char_classes(last) >= 3
        and not _is_wordy(last)
        and _clean_token(tok)
        and _entropy(last) >= 3.5
    ):
        ctx.add(start, dm.end(), "discord_token", _PRIO_SPECIFIC)
