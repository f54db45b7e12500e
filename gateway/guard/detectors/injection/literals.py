"""Rules found by a literal substring rather than a word.

Tags and headings that set a planted note off from the data around it, a
markdown image whose URL carries data, and the attacks in Chinese, Japanese
and Korean, whose words the word split cannot see (no spaces, particles glued
to nouns). A rule is searched only in a window around each occurrence of one
of its literals (a substring search each, memchr-fast when absent), so the
work stays linear.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final

from gateway.guard.detectors.injection.verdict import CUE as _CUE
from gateway.guard.detectors.injection.verdict import DENY as _DENY
from gateway.guard.detectors.injection.verdict import Hit as _Hit

# Occurrences of one literal looked at; a text with more is an attack on the
# detector's time, and the first ones decide anyway.
_MAX_SITES: Final = 32


@dataclass(frozen=True, slots=True)
class _LiteralRule:
    name: str
    signal: str
    level: int
    label: str
    literals: tuple[str, ...]  # the rule is searched only around these
    pattern: re.Pattern[str]
    before: int = 0
    after: int = 200
    cjk: bool = False  # only text with characters outside ASCII
    # One of these words must occur (a set lookup each) before any literal
    # is searched for; empty for the languages without spaces.
    words: frozenset[str] = frozenset()


def _cjk(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives))


_RULES: Final = (
    _LiteralRule(
        "marker.planted_tag",
        "planted_marker",
        _CUE,
        "note set off by a tag",
        ("<information", "<important", "<instruction", "</information", "</important"),
        re.compile(r"</?(?:information|important|instructions?)\s{0,3}>"),
        after=20,
        words=frozenset({"information", "important", "instruction", "instructions"}),
    ),
    _LiteralRule(
        "marker.comment_to_the_ai",
        "planted_marker",
        _CUE,
        "hidden comment addressed to the reader",
        ("<!--",),
        re.compile(r"<!--[^>]{0,300}?\b(?:ai|assistant|agent|llm|ignore|instructions?)\b"),
        after=340,
        words=frozenset(
            {"ai", "assistant", "agent", "llm", "ignore", "instruction", "instructions"}
        ),
    ),
    _LiteralRule(
        "marker.urgent_heading",
        "planted_marker",
        _CUE,
        "urgent heading",
        ("# important", "#important", "# urgent", "# attention", "!!"),
        # A heading that is only the alarm word ("### IMPORTANT"), not a
        # section about something ("## Important dates").
        re.compile(
            r"#{1,6}[ \t]*(?:important|urgent|attention)[ \t]*[:!]*[ \t]*(?:\n|$)"
            r"|\b(?:important|urgent)\s?!{2,}"
        ),
        before=12,
        after=20,
        words=frozenset({"important", "urgent", "attention"}),
    ),
    _LiteralRule(
        "exfil.markdown_image_with_data",
        "data_exfiltration",
        _DENY,
        "image URL carries data",
        ("![",),
        # "![x](https://e.example/p.png?q={conversation})": the placeholder
        # asks the reader to fill data into a URL that rendering fetches.
        re.compile(r"!\[[^\]\n]{0,100}\]\(\s?<?https?://[^\s(){}\[\]<>$]{1,300}(?:[{\[<]|\$\{)"),
        after=420,
        words=frozenset({"http", "https"}),
    ),
    _LiteralRule(
        "exfil.markdown_image_query",
        "data_exfiltration",
        _CUE,
        "image URL with a query",
        ("![",),
        re.compile(r"!\[[^\]\n]{0,100}\]\(\s?<?https?://[^\s()?]{1,300}\?[^\s()]{1,300}\)"),
        after=720,
        words=frozenset({"http", "https"}),
    ),
    # -- Chinese ---------------------------------------------------------------
    _LiteralRule(
        "multilingual.zh.ignore_previous_instructions",
        "override_instructions",
        _DENY,
        "instruction override",
        ("忽略", "无视", "忽视", "不要理会", "忘记", "忘掉", "不要遵守", "不要遵循", "忽略掉"),
        _cjk(
            r"(?:忽略|无视|忽视|不要理会|忘记|忘掉|不要遵守|不要遵循)(?:掉)?\s?(?:你\s?)?"
            r"(?:之前|以前|先前|上面|上述|前面|所有|一切|全部|原来|原有|原始|系统)"
            r"[^。！？\n]{0,12}?(?:指令|指示|说明|规则|提示|命令|要求|设定|限制)"
        ),
        before=0,
        after=40,
        cjk=True,
    ),
    _LiteralRule(
        "multilingual.zh.reveal_system_prompt",
        "prompt_extraction",
        _DENY,
        "hidden prompt request",
        ("系统提示", "系統提示", "初始指令", "系统指令", "提示词", "原始指令"),
        _cjk(
            r"(?:显示|输出|打印|告诉我|透露|泄露|重复|展示|给我|说出|写出|列出|公开)[^。！？\n]{0,8}?"
            r"(?:系统提示|系統提示|系统指令|初始指令|原始指令|提示词)"
        ),
        before=24,
        after=16,
        cjk=True,
    ),
    _LiteralRule(
        "multilingual.zh.persona_without_rules",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        (
            "开发者模式",
            "不受任何限制",
            "没有任何限制",
            "没有任何规则",
            "不受限制",
            "你现在是",
            "现在开始你是",
            "现在起你是",
            "你是dan",
        ),
        _cjk(
            r"开发者模式\s?(?:已)?(?:启用|开启|激活|打开)",
            r"(?:你现在是|从现在开始你是|从现在起你是)\s?dan",
            r"(?:不受任何|没有任何|不受)(?:限制|规则|约束|审查)的?\s?(?:ai|人工智能|助手|机器人|模型)",
            r"你(?:现在)?(?:不受任何|没有任何)(?:限制|规则|约束)",
        ),
        before=24,
        after=24,
        cjk=True,
    ),
    # -- Japanese --------------------------------------------------------------
    _LiteralRule(
        "multilingual.ja.ignore_previous_instructions",
        "override_instructions",
        _DENY,
        "instruction override",
        ("無視", "忘れ"),
        _cjk(
            r"(?:以前|前|上記|これまで|すべて|全て|今まで|先ほど|元)の\s?"
            r"(?:指示|命令|指令|ルール|プロンプト|設定|制約|制限)[^。！？\n]{0,6}?"
            r"(?:を|は)?\s?(?:すべて|全て)?\s?(?:無視|忘れ)"
        ),
        before=30,
        after=8,
        cjk=True,
    ),
    _LiteralRule(
        "multilingual.ja.reveal_system_prompt",
        "prompt_extraction",
        _DENY,
        "hidden prompt request",
        ("システムプロンプト", "初期プロンプト", "システム指示"),
        _cjk(
            r"(?:システムプロンプト|初期プロンプト|システム指示)[^。！？\n]{0,10}?"
            r"(?:表示|教えて|出力|見せて|開示|繰り返|書いて|印刷)"
        ),
        before=0,
        after=40,
        cjk=True,
    ),
    _LiteralRule(
        "multilingual.ja.persona_without_rules",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        ("開発者モード", "制限のない", "制限なし", "制約のない", "あなたは今から"),
        _cjk(
            r"開発者モード\s?(?:が|を)?\s?(?:有効|オン|起動|開始)",
            r"(?:あなたは今から|今からあなたは)\s?dan",
            r"(?:制限のない|制限なしの|制約のない|ルールのない)\s?(?:ai|人工知能|アシスタント|モデル|ボット)",
        ),
        before=24,
        after=24,
        cjk=True,
    ),
    # -- Korean ----------------------------------------------------------------
    _LiteralRule(
        "multilingual.ko.ignore_previous_instructions",
        "override_instructions",
        _DENY,
        "instruction override",
        ("무시", "잊어"),
        _cjk(
            r"(?:이전|앞의|위의|모든|기존|지금까지의|원래)\s?(?:의\s?)?(?:모든\s?)?"
            r"(?:지시|지침|명령|규칙|프롬프트|설정|제한)[^.!?\n]{0,6}?\s?(?:무시|잊어)"
        ),
        before=30,
        after=6,
        cjk=True,
    ),
    _LiteralRule(
        "multilingual.ko.reveal_system_prompt",
        "prompt_extraction",
        _DENY,
        "hidden prompt request",
        ("시스템 프롬프트", "시스템프롬프트", "초기 지시", "시스템 지시"),
        _cjk(
            r"(?:시스템\s?프롬프트|초기\s?지시|시스템\s?지시)[^.!?\n]{0,10}?"
            r"(?:보여|알려|출력|공개|반복|말해|적어)"
        ),
        before=0,
        after=40,
        cjk=True,
    ),
    _LiteralRule(
        "multilingual.ko.persona_without_rules",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        (
            "개발자 모드",
            "개발자모드",
            "제한 없는",
            "제한이 없는",
            "규칙이 없는",
            "너는 이제",
            "당신은 이제",
            "지금부터",
        ),
        _cjk(
            r"개발자\s?모드\s?(?:가|를)?\s?(?:활성화|켜|사용)",
            r"(?:제한\s?없는|제한이\s?없는|규칙이\s?없는)\s?(?:ai|인공지능|어시스턴트|모델|챗봇)",
            r"(?:너는|당신은)\s?(?:이제|지금부터)\s?dan",
        ),
        before=24,
        after=24,
        cjk=True,
    ),
)
_ASCII_RULES: Final = tuple(r for r in _RULES if not r.cjk)
_CJK_RULES: Final = tuple(r for r in _RULES if r.cjk)


def _leads(rule: _LiteralRule) -> tuple[str, ...]:
    return tuple(dict.fromkeys(lit[0] for lit in rule.literals))


_WITH_LEADS: Final = tuple((r, _leads(r)) for r in _ASCII_RULES)
_CJK_WITH_LEADS: Final = tuple((r, _leads(r)) for r in _CJK_RULES)
# Every word the literal rules may look for in a text's word set.
LITERAL_WORDS: Final = frozenset().union(*(r.words for r in _RULES))


def _search(rule: _LiteralRule, low: str) -> re.Match[str] | None:
    for literal in rule.literals:
        i = low.find(literal)
        sites = 0
        while i != -1 and sites < _MAX_SITES:
            m = rule.pattern.search(low, max(0, i - rule.before), i + len(literal) + rule.after)
            if m:
                return m
            sites += 1
            i = low.find(literal, i + 1)
    return None


def literal_hits(low: str, words: AbstractSet[str], cjk: bool) -> list[_Hit]:
    """Hits of the literal rules in casefolded `low` (layout kept), whose
    words are `words`; `cjk`: the text has kana, ideographs or Hangul."""
    hits: list[_Hit] = []
    for rule, leads in _WITH_LEADS + _CJK_WITH_LEADS if cjk else _WITH_LEADS:
        if rule.words and rule.words.isdisjoint(words):
            continue
        # A one-character search (memchr) per distinct first character
        # costs less than a search for each literal.
        if not any(map(low.__contains__, leads)):
            continue
        m = _search(rule, low)
        if m:
            hits.append(_Hit(rule.signal, rule.level, rule.label, m.group()))
    return hits
