"""Words and fragments that several phrase rules share.

The separators and words are disjoint classes, so the bounded repetition
cannot backtrack catastrophically.
"""

from __future__ import annotations

import re
from typing import Final

# A few words of filler between the parts of a phrase. The separators and
# words are disjoint classes, so the bounded repetition cannot backtrack
# catastrophically, and gaps stop at sentence ends and code punctuation so
# that unrelated clauses ("# type: ignore[...] ... content") never form one.
_SEP: Final = r"[^\w.!?;\[\]{}()<>=|#]+"
_GAP3: Final = rf"(?:{_SEP}\w+){{0,3}}?{_SEP}"
_GAP5: Final = rf"(?:{_SEP}\w+){{0,5}}?{_SEP}"
# "don't forget your safety rules" is the opposite of an override.
_NOT_NEGATED: Final = r"(?<!n't )(?<!not )(?<!never )(?<!dont )(?<!without )"

_OVERRIDE_VERB: Final = (
    r"(?:ignore|ignoring|disregard|disregarding|forget|forgetting|overlook"
    r"|discard|abandon|neglect|nevermind|never\W+mind"
    r"|unlearn|throw\W+out|set\W+aside|put\W+aside|pay\W+no\W+attention\W+to|disobey"
    r"|(?:do\W+not|don'?t|no\W+longer|stop|cease)\W+(?:follow(?:ing)?|obey(?:ing)?|adher(?:e|ing)\W+to))"
)
_OVERRIDE_QUAL: Final = (
    r"(?:previous|previously|prior|preceding|above|earlier|former|foregoing|original|initial"
    r"|old|all|any|every|your|system|developer|safety|ethical|moral|content|openai|existing"
    r"|default|programmed|preprogrammed|pre-programmed|given|built-in|current|these|those)"
)
# Qualifiers that point back at what the reader was given, not just "any".
_OVERRIDE_QUAL_POINTED: Final = (
    r"(?:previous|previously|prior|preceding|above|earlier|former|foregoing|original|initial"
    r"|your|system|developer|safety|openai|programmed|preprogrammed|pre-programmed|ethical"
    r"|moral|content)"
)
# Verbs that are everyday configuration talk ("override the default policy")
# count only when they point at the reader's own instructions.
_OVERRIDE_VERB_POINTED: Final = r"(?:override|overriding|bypass|bypassing|skip|dismiss|circumvent)"
_OBJ_STRONG: Final = (
    r"(?:instructions?|directions?|directives?|prompts?|prompting|rules|guidelines|guidance"
    r"|commands?|orders|programming|training|constraints|restrictions|policies|policy"
    r"|filters?|filtering|guardrails|safeguards|protocols?|conditioning|principles|ethics|morals"
    r"|morality|system\W+messages?)"
)
_OBJ_WEAK: Final = (
    r"(?:messages?|text|input|context|conversation|content|information|evidence|requests?"
    r"|tasks?|settings|configuration|boundaries|limitations|limits|everything|responses?)"
)
_EXTRACT_VERB: Final = (
    r"(?:repeat|print|reveal|show|display|output|tell|give|share|dump|leak|expose|list|write"
    r"|recite|relay|provide|spell|encode|translate|disclose|return|copy|paste|echo|summari[sz]e"
    r"|paraphrase|state|read|send|post|type|reproduce|quote|describe|put|respond\W+with|what)"
)
# The alternatives separately: each becomes its own top-level alternative of
# the rule, so that only those whose words occur are tried.
_EXTRACT_TARGETS_OWN: Final = (
    r"(?:your|the|its|my|this)\W+(?:\w+\W+){0,2}?(?:initial|original|hidden|secret|starting"
    r"|first|exact|full|complete|entire|underlying|internal|confidential|private|pre-?set|default)"
    r"\W+(?:\w+\W+)?(?:instructions?|prompts?|prompting|configuration|directives?|rules|guidelines"
    r"|system\W+message|message|context)",
    r"your\W+(?:\w+\W+){0,2}?(?:system\W+prompts?|system\W+message|system\W+instructions"
    r"|instructions|directives|prompts?|prompting|configuration|programming|rules|guidelines"
    r"|system(?:'s)?\W+(?:parameters|configuration|settings))"
    # "your instructions for the deploy" asks for guidance, not for the prompt.
    r"(?!\W+(?:for|on|about|regarding|when|if)\b)",
    r"(?:instructions?|directives?|rules|guidelines|prompt)\W+(?:that\W+)?you\W+(?:were|have\W+been"
    r"|got|received|are\W+given|are\W+following)",
    r"(?:text|words|content|everything|instructions|prompt|message|messages)\W+(?:written\W+)?"
    r"(?:above|before\W+this|prior\W+to\W+this)",
    r"(?:above|previous|prior|preceding)\W+(?:prompt|instructions|text|system\W+message)",
    r"(?:the|this|entire|whole)\W+(?:\w+\W+)?conversation\W+(?:word\W+for\W+word|verbatim)",
    r"(?:pre-?prompt|meta-?prompt|system\W+prompt\W+(?:verbatim|word\W+for\W+word|in\W+full))",
    r"(?:initial|original|starting|hidden)\W+(?:instructions|configuration|prompt)",
    r"system\W+(?:instructions|configuration)",
)
_SECRET_NOUN: Final = (
    r"(?:api\W?keys?|secret\W?keys?|access\W?tokens?|auth(?:entication)?\W?tokens?|bearer\W+tokens?"
    r"|credentials|passwords?|passphrases?|env(?:ironment)?\W?var(?:iable)?s|\.env\b|private\W?keys?"
    r"|ssh\W?keys?|session\W+(?:tokens?|cookies?)|secrets|usernames\W+and\W+passwords)"
)
_HOWTO: Final = re.compile(r"\bhow\W+(?:to|do|does|can|could|should|would|did)\b")

# Words a phrase may start with (the rule tries a match only where one of
# them begins a word) and gate words (the rule runs only if one of them
# occurs anywhere). Gates are the rarer words, so most text skips most rules.
_OVERRIDE_STARTS: Final = (
    "ignore ignoring disregard disregarding forget forgetting overlook discard abandon neglect"
    " nevermind never unlearn throw set put pay disobey do don dont no stop cease"
)
_OBJ_STRONG_WORDS: Final = (
    "instructions instruction directions direction directives directive prompts prompt prompting"
    " rules guidelines guidance commands command orders programming training constraints"
    " restrictions policies policy filters filter filtering guardrails safeguards protocols"
    " protocol conditioning principles ethics morals morality messages message"
)
_OBJ_WEAK_WORDS: Final = (
    "messages message text input context conversation content information evidence requests"
    " request tasks task settings configuration boundaries limitations limits everything"
    " responses response"
)
_LIMIT_NOUNS: Final = (
    "rules restrictions limits limitations filters guidelines boundaries morals ethics censorship"
)
_EXTRACT_VERBS: Final = (
    "repeat print reveal show display output tell give share dump leak expose list write recite"
    " relay provide spell encode translate disclose return copy paste echo summarize summarise"
    " paraphrase state read send post type reproduce quote describe put respond what"
)
_SECRET_NOUNS: Final = (
    "key keys apikey apikeys token tokens credentials password passwords passphrase passphrases"
    " env environment vars variables secrets ssh cookie cookies usernames"
)
_EXTRACT_GENERIC_LABEL: Final = "system prompt request"
