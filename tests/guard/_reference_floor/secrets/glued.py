"""Token formats whose literal runs straight into the body: ``AKIA``, ``GR1348941``, ``dapi``.

The formats are data (``rules.yaml``, entries with ``keywords``). The scan finds
them with one pass per anchor character: each keyword is anchored on the
character of it that costs the prefilter least (one some other pass already
looks for, else a capital, a separator, a rare letter or a digit), and the
pass's pattern is the rest of the keyword with lookbehinds for the whole
keyword and the rule's pattern (see ``probe``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.guard._reference_floor.secrets.common import _PRIO_CONTEXT, _PRIO_SPECIFIC, _Ctx
from tests.guard._reference_floor.secrets.rules import RULES, Rule
from tests.guard._reference_floor.secrets.values import (
    _char_classes,
    _clean_token,
    _entropy,
    _left_ok,
)

# Characters other passes already anchor on (see ``engine``): a keyword anchored
# on one of them adds an alternative to a search made anyway. Ranked: capitals
# are rare; "p" and "u" are common letters and their searches the busiest.
_SHARED = {"A": 0.0, "J": 0.0, "B": 0.0, "S": 0.0, "P": 0.2, "U": 0.2, "G": 0.2, "g": 0.4}
_SHARED |= {"u": 0.5, "p": 0.6}
# Never "c" or "k": their searches start with a literal run ("cre", "ke") that
# re finds with a fast scan, which one more alternative would turn into a test
# at every "c" and "k".
_NEVER = frozenset("cCkK")
_SEPARATORS = frozenset("-_.")
# Lowercase letters from the commonest in English text and code to the rarest.
_BY_FREQUENCY = "etaoinsrhldcumfpgwybvkxjqz"


def _cost(c: str) -> float:
    """How often the prefilter would stop at ``c`` in ordinary text, as a rank."""
    if c in _SHARED:
        return _SHARED[c]
    if c in _NEVER:
        return 9.0
    if c.isupper():
        # Capitals are rare in prose; among them, as among lowercase letters,
        # the rarer the better ("EZTK" anchors on Z, not E).
        return 1.0 + (len(_BY_FREQUENCY) - _BY_FREQUENCY.index(c.lower())) / len(_BY_FREQUENCY) / 2
    if c in _SEPARATORS:
        # Searched for anyway; one more alternative that starts with a literal
        # costs a character test at each separator, not another search.
        return 1.5
    if c.islower():
        return 2.0 + (len(_BY_FREQUENCY) - _BY_FREQUENCY.index(c)) / len(_BY_FREQUENCY)
    if c.isdigit():
        return 2.2  # rarer than most letters in prose, about as common as "d" in logs
    return 4.0


@dataclass(frozen=True, slots=True)
class _Keyword:
    literal: str
    offset: int  # of the anchor character in the literal
    rule: Rule


def _anchor(literal: str) -> int:
    return min(range(len(literal)), key=lambda i: (_cost(literal[i]), i))


def _table() -> dict[str, tuple[_Keyword, ...]]:
    by_anchor: dict[str, list[_Keyword]] = {}
    for rule in RULES:
        for literal in rule.keywords:
            i = _anchor(literal)
            by_anchor.setdefault(literal[i], []).append(_Keyword(literal, i, rule))
    # Longer keywords first: "EAAA" (Square) is tried before a shorter one it extends.
    return {
        a: tuple(sorted(ks, key=lambda k: -len(k.literal))) for a, ks in sorted(by_anchor.items())
    }


KEYWORDS_AT: dict[str, tuple[_Keyword, ...]] = _table()


_NAMED_GROUP_RE = re.compile(r"\(\?P<\w+>")


def probe(anchor: str, lower: bool = False) -> str:
    """Where one of the anchor's keywords starts a match of its rule.

    The rest of the keyword after the anchor, then a lookbehind over the whole
    keyword that also asserts the rule's pattern from the keyword's start: the
    prefilter stops only where the rule matches ("pat" in "path" costs the
    scan nothing). For the lowercased copy, the pattern ignoring case: it
    matches there wherever the rule matches the text. The rests are laid out
    as a trie, so each occurrence of the anchor tests each next character once.
    """
    items = []
    for k in KEYWORDS_AT[anchor]:
        lit = k.literal.lower() if lower else k.literal
        body = _NAMED_GROUP_RE.sub("(?:", k.rule.pattern.pattern)
        if lower:
            body = f"(?i:{body})"
        # The plain lookbehind first: it turns away most places in a few steps.
        behind = f"(?<={re.escape(lit)})" if k.offset else ""
        items.append((lit[k.offset + 1 :], f"{behind}(?<=(?={body}){re.escape(lit)})"))
    return _trie(items)


def _trie(items: list[tuple[str, str]]) -> str:
    """Alternatives of literal rests, each followed by its tail, sharing prefixes."""
    groups: dict[str, list[tuple[str, str]]] = {}
    alts: list[str] = []
    for rest, tail in items:
        if rest:
            groups.setdefault(rest[0], []).append((rest[1:], tail))
        elif tail not in alts:
            alts.append(tail)
    alts = [re.escape(c) + _trie(sub) for c, sub in groups.items()] + alts
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _token_ok(rule: Rule, token: str, body: str) -> bool:
    if rule.fill == "xxxx":
        # AWS docs and fixtures fill ids with Z or EXAMPLE; only XXXX is a blank.
        if "XXXX" in token:
            return False
    elif not _clean_token(body, rule.runs):
        return False
    if len(token) < rule.min_length or _char_classes(body) < rule.min_classes:
        return False
    return not rule.entropy or _entropy(body) >= rule.entropy


def on_keyword_token(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    for k in KEYWORDS_AT[text[pos]]:
        start = pos - k.offset
        if start < 0 or not text.startswith(k.literal, start):
            continue
        if not _left_ok(text, start, k.rule.left):
            continue
        tm = k.rule.pattern.match(text, start)
        if tm is None:
            continue
        if k.rule.pattern.groups:
            vs, ve = tm.span("value")
            value = text[vs:ve]
            if _token_ok(k.rule, value, value):
                ctx.add(vs, ve, k.rule.kind, _PRIO_CONTEXT)
            return
        token = tm.group(0)
        if _token_ok(k.rule, token, token[len(k.literal) :]):
            ctx.add(start, tm.end(), k.rule.kind, _PRIO_SPECIFIC)
        return
