"""Chat-template control tokens, role tags and fake system headers.

Searched on the casefolded text before whitespace is collapsed, so that line
starts survive, and only in windows around the tokens' literals.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final

from gateway.guard.detectors.injection.gates import _top_level, _Ways
from gateway.guard.detectors.injection.text import _words
from gateway.guard.detectors.injection.verdict import DENY as _DENY
from gateway.guard.detectors.injection.verdict import REVIEW as _REVIEW
from gateway.guard.detectors.injection.verdict import Hit as _Hit

# Chat-template control tokens and role tags. Searched on the casefolded text
# before whitespace is collapsed, so that line starts survive.
_TEMPLATE_SYSTEM: Final = re.compile(
    r"<\|\s*im_start\s*\|>\s*(?:system|developer)"
    r"|<\|\s*(?:system|developer)\s*\|>"
    r"|<\|\s*start_header_id\s*\|>\s*(?:system|developer)"
    r"|<<\s*sys\s*>>"
    r"|</?\s*(?:system|system_prompt|developer_message)\s*>"
    r"|\[\s*(?:system|sys)(?:\s+(?:note|message|prompt|override|instructions?))?\s*[:\]]"
)
# A fake role header at a line start followed by an instruction to the reader.
_ROLE_HEADER: Final = re.compile(
    r"^[ \t>*]*#{1,4}[ \t]*(?:system|instruction|instructions)[ \t]*(?:prompt|message)?[ \t]*:"
    r"|^[ \t>*]*\**(?:system|developer|admin|administrator)(?:[ \t]+(?:message|note|prompt|override"
    r"|instructions?|update|alert|notice|command))?\**[ \t]*:[ \t]*\**[ \t]*"
    r"(?:you|ignore|disregard|forget|new|from\W+now|the\W+(?:assistant|ai|model)|as\W+(?:an?\W+)?"
    r"(?:ai|assistant)|do\W+not|always|never|override|important|this\W+chat|[a-z]+\W+mode)",
    re.MULTILINE,
)
_TEMPLATE_OTHER: Final = re.compile(
    r"<\|\s*(?:im_start|im_end|user|assistant|endoftext|begin_of_text|end_of_text|start_header_id"
    r"|end_header_id|eot_id|eom_id|tool|ipython)\s*\|>"
    r"|<</\s*sys\s*>>|<start_of_turn>|<end_of_turn>"
    r"|^[ \t]*#{2,4}[ \t]*(?:human|assistant|response|user)[ \t]*:",
    re.MULTILINE,
)
# Template source (Jinja chat templates, tokenizer configs) names the tokens
# without using them against anyone.
_TEMPLATE_SOURCE: Final = ("{%", "{{", "chat_template", "tokenizer", "apply_chat_template")


@dataclass(frozen=True, slots=True)
class _WindowRule:
    """A rule searched in windows around substrings (template tokens)."""

    signal: str
    level: int
    label: str
    pattern: re.Pattern[str]
    anchors: frozenset[str]  # words that open a window
    literals: tuple[str, ...] = ()  # substrings that open a window
    requires: tuple[str, ...] = ()  # one of these substrings must occur
    before: int = 8
    after: int = 64


# Template rules read the casefolded text with its line breaks.
_TEMPLATE_RULES: Final = (
    _WindowRule(
        "chat_template_token",
        _DENY,
        "system role marker",
        _TEMPLATE_SYSTEM,
        frozenset(),
        literals=("<|", "<<", "<system", "</system", "<developer", "[system", "[sys", "[ s"),
    ),
    _WindowRule(
        "role_impersonation",
        _DENY,
        "fake system header",
        _ROLE_HEADER,
        _words("system developer admin administrator instruction instructions"),
        requires=(":",),
        before=24,
        after=160,
    ),
    _WindowRule(
        "chat_template_token",
        _REVIEW,
        "chat template token",
        _TEMPLATE_OTHER,
        frozenset(),
        literals=("<|", "<</", "<start_of", "<end_of", "##"),
    ),
)
_TEMPLATE_CHARS: Final = ("<", "[", ":", "#")
_TEMPLATE_WAYS: Final = _Ways.of([_top_level(r.pattern.pattern) for r in _TEMPLATE_RULES])
# Llama's [INST] markers are looked for when this word occurs.
_INST: Final = "inst"
# Every word the template rules may look for in a text's word set.
TEMPLATE_WORDS: Final = (
    _TEMPLATE_WAYS.words | frozenset().union(*(r.anchors for r in _TEMPLATE_RULES)) | {_INST}
)


def _search_windows(rule: _WindowRule, s: str, keys: list[str]) -> re.Match[str] | None:
    """Search `rule` only in windows around occurrences of `keys`: linear, cheap."""
    if rule.requires and not any(req in s for req in rule.requires):
        return None
    n = len(s)
    if n <= rule.before + rule.after:
        return rule.pattern.search(s)
    starts: list[int] = []
    for key in keys:
        i = s.find(key)
        while i != -1:
            starts.append(i)
            i = s.find(key, i + 1)
    starts.sort()
    # Merge overlapping windows so that no character is searched twice. A
    # window ends at the first line break after its reach, looked for in a
    # bounded span, so that text without breaks stays linear.
    lo = hi = -1
    for i in starts:
        w_lo = max(0, i - rule.before)
        reach = min(n, i + rule.after)
        w_hi = s.find("\n", reach, reach + 64)
        w_hi = min(n, reach + 64) if w_hi == -1 else w_hi
        if w_lo <= hi:
            hi = max(hi, w_hi)
            continue
        if hi > lo:
            m = rule.pattern.search(s, lo, hi)
            if m:
                return m
        lo, hi = w_lo, w_hi
    return rule.pattern.search(s, lo, hi) if hi > lo else None


def _template_hits(
    text: str, low: str, words: AbstractSet[str], present: AbstractSet[str]
) -> list[_Hit]:
    hits: list[_Hit] = []
    found = _TEMPLATE_WAYS.keys.intersection(present)
    live = _TEMPLATE_WAYS.live(found, words, low) if found else {}
    marks = [c for c in _TEMPLATE_CHARS if c in low] if live else []
    if marks:
        for i in live:
            rule = _TEMPLATE_RULES[i]
            keys = [*rule.anchors.intersection(words)]
            keys += [x for x in rule.literals if x[0] in marks and x in low]
            m = _search_windows(rule, low, keys) if keys else None
            if m:
                hits.append(_Hit(rule.signal, rule.level, rule.label, m.group()))
                break
    # "[INST]" is the word "inst" to the word split: a set lookup before
    # the case-sensitive search.
    if not hits and _INST in words and "INST]" in text:
        # Llama's markers are case-sensitive special tokens; lowercase
        # "[inst]" is ordinary code ("[inst] = ...") and must not match.
        if "[INST]" in text:
            hits.append(_Hit("chat_template_token", _DENY, "instruction marker", "[INST]"))
        elif "[/INST]" in text:
            hits.append(_Hit("chat_template_token", _REVIEW, "chat template token", "[/INST]"))
    if hits and hits[0].level == _DENY and any(src in low for src in _TEMPLATE_SOURCE):
        # Chat-template source names the tokens without using them.
        hits[0] = _Hit(hits[0].signal, _REVIEW, hits[0].label, hits[0].quote)
    return hits
