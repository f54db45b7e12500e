"""Jailbreak personas: explicit "no rules apply to you" framings and role-play cues.

Single trigger words ("uncensored", "jailbreak") occur in benign text and are
left to the model; these phrases are not.
"""

from __future__ import annotations

from typing import Final

from gateway.guard.detectors.injection.rules.base import Phrase
from gateway.guard.detectors.injection.rules.vocab import (
    _LIMIT_NOUNS,
)
from gateway.guard.detectors.injection.verdict import DENY as _DENY
from gateway.guard.detectors.injection.verdict import REVIEW as _REVIEW

RULES: Final[tuple[Phrase, ...]] = (
    # Jailbreak personas: explicit "no rules apply to you" framings. Single
    # trigger words ("uncensored", "jailbreak") occur in benign text and are
    # left to the model; these phrases are not.
    Phrase(
        "persona.do_anything_now",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "do",
        "anything",
        r"\bdo\W+anything\W+now\b",
    ),
    Phrase(
        "persona.you_are_dan",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "you jailbreak jailbroken unlocked developer",
        "dan jailbreak jailbroken unlocked",
        r"\byou\W+are\W+(?:now\W+)?(?:going\W+to\W+(?:be|act\W+as|pretend\W+to\W+be)\W+)?(?:a\W+)?"
        r"(?:dan|jailbroken)\b"
        # The bracketed answer labels of dual-response jailbreaks.
        r"|\b(?:jailbreak|jailbroken|unlocked|developer\W+mode\W+output)\W{0,3}\]"
        r"|\bjailbroken\W+(?:ai|model|version|chatbot|mode|llm)",
    ),
    Phrase(
        "persona.mode_enabled",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "dan jailbreak jailbroken developer god evil unrestricted unfiltered opposite dev",
        "mode",
        r"\b(?:dan|jailbreak|jailbroken|developer|god|evil|unrestricted|unfiltered|opposite|dev)"
        r"[\W_]*mode[\W_]+(?:enabled|activated|is\W+(?:now\W+)?(?:on|enabled|active)|output"
        r"|response)",
    ),
    Phrase(
        "persona.no_rules",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "you ai chatbot bot model assistant llm free broken break breaking freed",
        _LIMIT_NOUNS + " confines programming",
        r"\byou\W+(?:have|has)\W+no\W+(?:\w+\W+)?(?:rules|restrictions|limits|limitations|filters"
        r"|guidelines|boundaries|morals|ethics|censorship)\b"
        r"|\b(?:ai|chatbot|bot|model|assistant|llm)\W+(?:\w+\W+)?(?:without|with\W+no|free\W+of"
        r"|free\W+from)\W+(?:any\W+)?(?:\w+\W+)?(?:restrictions|filters|limits|limitations"
        r"|censorship|guidelines|rules|boundaries)\b"
        r"|\bfree\W+(?:of|from)\W+(?:your|its|all|any)\W+(?:\w+\W+)?(?:confines|restrictions"
        r"|limitations|rules|guidelines|programming|filters|ethics|morals)\b"
        r"|\b(?:broken|break|breaking|freed|free)\W+(?:free\W+)?(?:of|from)\W+the\W+(?:\w+\W+)?"
        r"confines\b",
    ),
    Phrase(
        "persona.no_longer_bound",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "you not never no don dont do doesn doesnt does",
        "longer required obligated forced obliged abide follow comply adhere obey stick",
        r"\byou\W+are\W+no\W+longer\W+(?:a\W+|an\W+|the\W+)?(?:chat\W?gpt|gpt|claude|bard|gemini|ai"
        r"|assistant|language\W+model|bound|restricted|limited|required|censored)\b"
        r"|\b(?:not|never|no\W+longer)\W+(?:required|obligated|forced|obliged)\W+to\W+(?:follow"
        r"|abide|comply|adhere|obey)\b"
        r"|\b(?:don'?t|do\W+not|doesn'?t|does\W+not|never|no\W+longer|not)\W+(?:have|need|needs|has)"
        r"\W+to\W+(?:abide|follow|comply|adhere|obey|stick)\W+(?:by\W+|with\W+|to\W+)?(?:any\W+"
        r"|the\W+|their\W+|its\W+|your\W+|openai'?s?\W+)?(?:\w+\W+)?(?:rules|guidelines|policies"
        r"|policy|restrictions|ethics|morals|laws|filters|principles|limitations)",
    ),
    Phrase(
        "persona.not_bound_by",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "not no never isn isnt aren arent",
        "bound restricted limited constrained governed censored held",
        r"\b(?:not|no\W+longer|never|isn'?t|aren'?t)\W+(?:be\W+)?(?:bound|restricted|limited"
        r"|constrained|governed|censored|held\W+back)\W+by\W+(?:any\W+|the\W+|its\W+|your\W+"
        r"|their\W+|openai'?s?\W+)?(?:\w+\W+)?(?:rules|restrictions|guidelines|policies|policy"
        r"|ethics|morals|morality|filters|programming|limitations|laws|principles|openai|content)",
    ),
    Phrase(
        "persona.never_refuse",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "never cannot can cant will won wont must mustn shall not",
        "refuse decline deny",
        r"\b(?:never|cannot|can'?t|will\W+not|won'?t|must\W+not|mustn'?t|shall\W+not"
        r"|not\W+allowed\W+to)\W+(?:ever\W+)?(?:refuse|decline|deny)\W+(?:a\W+|any\W+|to\W+answer"
        r"|to\W+respond|my|the|requests?|questions?|prompts?|orders?|anything)",
    ),
    Phrase(
        "persona.ignore_openai_policy",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "ignore bypass disregard violate break circumvent evade ignores bypasses violates openai",
        "openai",
        r"\b(?:ignore|bypass|disregard|violate|break|circumvent|evade|ignores|bypasses|violates)"
        r"\W+(?:all\W+|any\W+|the\W+|its\W+|your\W+)?openai'?s?\W+(?:\w+\W+)?(?:polic|guideline"
        r"|rule|restriction|filter|content)"
        r"|\bopenai'?s?\W+(?:\w+\W+)?(?:polic(?:y|ies)|guidelines|rules)\W+(?:no\W+longer|do\W+not"
        r"|don'?t|does\W+not|doesn'?t)\W+apply",
    ),
    Phrase(
        "persona.without_morals",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "without no free devoid",
        "moral morals ethical ethicals ethic ethics",
        r"\b(?:without|no|free\W+of|free\W+from|devoid\W+of)\W+(?:any\W+)?(?:moral|ethical|ethic)"
        r"(?:al)?s?\W+(?:or\W+(?:moral|ethical|legal)\W+)?(?:restrictions|guidelines|limitations"
        r"|constraints|boundaries|filters|limits|compass|principles|standards)\b",
    ),
    Phrase(
        "persona.answer_without_restrictions",
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "answer answers",
        "without regardless matter",
        r"\banswers?\W+(?:any|every|all)\W+(?:\w+\W+){0,2}?(?:questions?|requests?|prompts?)\W+"
        r"(?:without|regardless\W+of|no\W+matter)\W+(?:any\W+)?(?:\w+\W+)?(?:restrictions|filters"
        r"|morals|ethics|legality|censorship|warnings|how\W+(?:immoral|unethical|illegal"
        r"|dangerous))",
    ),
    Phrase(
        "persona.never_break_character",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "never not don dont do can cant cannot without",
        "character",
        r"\b(?:never|not|don'?t|do\W+not|can'?t|cannot|without)\W+(?:ever\W+)?break(?:ing)?\W+"
        r"character\b",
    ),
    Phrase(
        "persona.does_not_follow_rules",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "doesn doesnt does don dont do won will never",
        "follow abide comply adhere obey care respect",
        r"\b(?:doesn'?t|does\W+not|don'?t|do\W+not|won'?t|will\W+not|never)\W+(?:follow|abide\W+by"
        r"|comply\W+with|adhere\W+to|obey|care\W+about|respect)\W+(?:any\W+|the\W+|its\W+|your\W+"
        r"|openai'?s?\W+|chat\W?gpt'?s?\W+)?(?:\w+\W+)?(?:rules|guidelines|policies|restrictions"
        r"|ethics|morals|laws|principles|filters|tos)\b",
    ),
    Phrase(
        "persona.without_remorse",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "without no regardless",
        "remorse ethics morals morality conscience legality laws law rules guidelines policies",
        r"\b(?:without|no)\W+(?:any\W+)?(?:remorse|ethics|morals|morality|conscience)\b"
        r"|\bregardless\W+of\W+(?:\w+\W+){0,2}?(?:legality|ethics|morality|laws?|rules|guidelines"
        r"|policies)\b",
    ),
    Phrase(
        "persona.no_matter_how_immoral",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "no",
        "immoral unethical illegal dangerous offensive inappropriate explicit",
        r"\bno\W+matter\W+how\W+(?:immoral|unethical|illegal|dangerous|offensive|inappropriate"
        r"|explicit)",
    ),
    Phrase(
        "persona.two_responses",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "two 2",
        "different separate distinct",
        r"\b(?:two|2)\W+(?:different|separate|distinct)\W+(?:responses|answers|ways|paragraphs)\b",
    ),
    Phrase(
        "persona.unfiltered_ai",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "unfiltered unfiltred uncensored unrestricted unlimited amoral unethical unhinged"
        " jailbroken",
        "",
        r"\b(?:unfiltered|unfiltred|uncensored|unrestricted|unlimited|amoral|unethical|unhinged"
        r"|jailbroken)\W+(?:\w+\W+){0,2}?(?:ai|chatbot|bot|model|language\W+model|assistant|llm"
        r"|version\W+of\W+(?:chatgpt|yourself))\b",
    ),
    Phrase(
        "persona.dan_label",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "dan",
        "",
        # "[DAN]:" answer labels; a bare name in brackets is only a cue.
        r"(?<=\[)dan\b[^\]\n]{0,6}\]",
    ),
    Phrase(
        "persona.named_mode",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "opposite dan jailbreak jailbroken evil god chaos dev",
        "mode",
        r"\b(?:opposite|dan|jailbreak|jailbroken|evil|god|chaos|dev)\W+mode\b",
    ),
    Phrase(
        "persona.you_are_now",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "you from",
        "now",
        r"\byou\W+are\W+now\W+(?:a\W+|an\W+|the\W+|my\W+|called\W+|named\W+|known\W+as\W+)?"
        r"(?:\w+\W+){0,3}?(?:bot|ai|assistant|chatbot|model|persona|character|version|gpt|entity"
        r"|simulator|terminal|cmd|shell)\b"
        r"|\bfrom\W+now\W+on\W+you\W+(?:are|will|shall|must|should|'re|'ll)\W+(?:(?:going\W+to|now"
        r"|be\W+going\W+to|always)\W+)?(?:act|pretend|roleplay|role-play|play\W+the\W+role|simulate"
        r"|behave|be\W+(?:a|an|my|in|called|named)|take\W+on|embody|become|impersonate)\b",
    ),
    Phrase(
        "persona.act_as_unrestricted_ai",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "pretend act roleplay role behave",
        "ai chatbot bot language",
        r"\b(?:pretend|act|roleplay|role-play|behave)\W+(?:to\W+be|as|like)\W+(?:an?\W+)?"
        r"(?:\w+\W+){0,3}?(?:ai|chatbot|bot|language\W+model)\W+(?:\w+\W+){0,4}?(?:without"
        r"|with\W+no|that\W+has\W+no|who\W+has\W+no|which\W+has\W+no)\b",
    ),
    Phrase(
        "persona.content_policy",
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "content",
        "policy policies",
        r"\bcontent\W+polic(?:y|ies)\b",
    ),
)
