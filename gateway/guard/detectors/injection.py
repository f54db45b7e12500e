"""Embedded, deterministic prompt-injection detector for untrusted inbound text.

Used when no LLM classifier is configured. Two layers, both pure Python:

* rules: explicit instruction overrides, jailbreak personas, chat-template
  tokens and fake role headers, requests for hidden prompts or secrets,
  exfiltration and concealment, invisible Unicode, and instructions hidden in
  base64 / hex / percent / entity / rot13 encodings or in tag characters;
* a small logistic-regression model over binary word features (weights in
  ``injection_model.json``, trained by ``bench/train_injection.py``) that
  catches the long role-play jailbreaks (DAN and friends) that no phrase list
  covers without false positives.

A rule deny is final; the model can only raise the decision. The default is
allow: an imperative aimed at the reader ("run the tests and report") is
collaboration, not steering.

Cost: the text is casefolded and split into words once (C-level passes).
Each phrase rule names the words its match can start with and a rarer gate
word set; one set intersection picks the few rules whose gates occur, and
those only try a regex match where a start word begins a word. Template
tokens are searched in windows around their literal openers. Clean text thus
costs a few set operations plus the model's dictionary lookups (tens of
microseconds per KB). All regexes use bounded repetition over disjoint
character classes, so the work stays linear in the input size.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from itertools import repeat
from typing import Final, Literal
from urllib.parse import unquote

Decision = Literal["allow", "review", "deny"]


@dataclass(frozen=True, slots=True)
class InjectionAssessment:
    decision: Decision
    category: str  # "prompt_injection" when flagged, "none" when allowed
    reason: str  # short; quotes at most _QUOTE_MAX characters of the text
    signals: tuple[str, ...]


CATEGORY: Final = "prompt_injection"
_ALLOW: Final = InjectionAssessment("allow", "none", "no injection indicators", ())

_REVIEW: Final = 1
_DENY: Final = 2

# Quoting the match helps a reviewer; quoting more would copy the payload into logs.
_QUOTE_MAX: Final = 32

# The model reads at most this many words, in windows of _MODEL_WINDOW; rules
# read everything. Jailbreak prompts are a few thousand words at most.
_MODEL_MAX_WORDS: Final = 16 * 1024
_MODEL_WINDOW: Final = 2048
_MODEL_MIN_WORDS: Final = 16

# Bounds on decoding work for encoded blobs.
_MAX_BLOBS: Final = 16
_BLOB_DECODE_CHARS: Final = 8 * 1024
_LONG_TOKEN: Final = 16

# --------------------------------------------------------------------------
# Normalisation and words
# --------------------------------------------------------------------------

# Invisible characters an attacker uses to split trigger words or hide text.
_ZERO_WIDTH: Final = "\u200b\u200c\u200d\u2060\ufeff\u180e\u2061\u2062\u2063\u2064\u00ad"
_BIDI: Final = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_TAG_FIRST: Final = 0xE0000
_TAG_LAST: Final = 0xE007F

_STRIP_TABLE: Final[dict[int, None]] = {ord(c): None for c in _ZERO_WIDTH + _BIDI} | {
    cp: None for cp in range(_TAG_FIRST, _TAG_LAST + 1)
}

# Only letters that render like Latin in common fonts. A whole Cyrillic or
# Greek text becomes gibberish Latin, which matches no rule, so this is safe.
_HOMOGLYPHS: Final = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ӏ": "l",
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ς": "s",
        "ɡ": "g",
        "ı": "i",
        "ǀ": "l",
    }
)
_LOOKALIKES: Final = "".join(chr(c) for c in _HOMOGLYPHS)
_LOOKALIKE_ANY: Final = re.compile(f"[{_LOOKALIKES}]")
_LATIN_ANY: Final = re.compile("[a-z]")
_MIXED_SCRIPT: Final = re.compile(f"[a-z][{_LOOKALIKES}]|[{_LOOKALIKES}][a-z]")
# Typographic punctuation that NFKC keeps; mapped so that words split (and
# "don’t" matches "don't") the same way as in ASCII text.
_PUNCT: Final = (
    ("\u2018", "'"),
    ("\u2019", "'"),
    ("\u02bc", "'"),
    ("\u201c", '"'),
    ("\u201d", '"'),
    ("\u201e", '"'),
    ("\u00ab", '"'),
    ("\u00bb", '"'),
    ("\u2013", "-"),
    ("\u2014", "-"),
    ("\u2026", "..."),
    ("\u3002", "."),
    ("\u3001", ","),
)

# Modest leetspeak (digits for letters), applied to a second copy only when
# it turns a mixed word into a trigger word, so digits in ordinary text cost
# nothing.
_LEET: Final = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t"})

_INVISIBLE_ANY: Final = re.compile("[" + _ZERO_WIDTH + _BIDI + "\U000e0000-\U000e007f]")

# Words are split at ASCII punctuation and whitespace ("openai's" -> "openai",
# "s"); bytes of multi-byte characters pass through, so this is one C pass.
_ASCII_SEP: Final = bytes(b if chr(b).isalnum() else 32 for b in range(128)) + bytes(
    range(128, 256)
)
_WORD: Final = re.compile(r"[^\W_]+")


def _casefolded(text: str, invisible: bool | None = None) -> str:
    """NFKC, casefold, homoglyphs mapped, invisibles stripped; layout kept."""
    if text.isascii():
        return text.lower()
    if invisible is None:
        invisible = _INVISIBLE_ANY.search(text) is not None
    low = text.translate(_STRIP_TABLE) if invisible else text
    if not unicodedata.is_normalized("NFKC", low):
        low = unicodedata.normalize("NFKC", low)
    low = low.casefold()
    for char, repl in _PUNCT:
        low = low.replace(char, repl)
    # Translating costs a dict lookup per character, and only a word that
    # mixes Latin with look-alike letters ("іgnore") needs it; the cheap
    # single-class scans rule out English and all-Cyrillic text first.
    if _LOOKALIKE_ANY.search(low) and _LATIN_ANY.search(low) and _MIXED_SCRIPT.search(low):
        return low.translate(_HOMOGLYPHS)
    return low


def _normalise(text: str) -> str:
    """Casefolded with whitespace collapsed: what the phrase rules read."""
    return " ".join(_casefolded(text).split())


def _tokens(s: str) -> list[str]:
    """Words of casefolded text; the same split the model was trained on."""
    if s.isascii():
        return s.encode("ascii").translate(_ASCII_SEP).decode("ascii").split()
    split = s.encode("utf-8", "surrogatepass").translate(_ASCII_SEP)
    fast = split.decode("utf-8", "surrogatepass").split()
    if all(map(str.isalnum, fast)):
        return fast
    words: list[str] = []
    for word in fast:
        if word.isalnum():
            words.append(word)
        else:
            # Emoji and other symbols glued to a word ("🔓jailbreak").
            words.extend(_WORD.findall(word))
    return words


# --------------------------------------------------------------------------
# Phrase patterns
# --------------------------------------------------------------------------

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
_EXTRACT_TARGET_OWN: Final = (
    r"(?:(?:your|the|its|my|this)\W+(?:\w+\W+){0,2}?(?:initial|original|hidden|secret|starting"
    r"|first|exact|full|complete|entire|underlying|internal|confidential|private|pre-?set|default)"
    r"\W+(?:\w+\W+)?(?:instructions?|prompts?|prompting|configuration|directives?|rules|guidelines"
    r"|system\W+message|message|context)"
    r"|your\W+(?:\w+\W+){0,2}?(?:system\W+prompts?|system\W+message|system\W+instructions"
    r"|instructions|directives|prompts?|prompting|configuration|programming|rules|guidelines"
    r"|system(?:'s)?\W+(?:parameters|configuration|settings))"
    # "your instructions for the deploy" asks for guidance, not for the prompt.
    r"(?!\W+(?:for|on|about|regarding|when|if)\b)"
    r"|(?:instructions?|directives?|rules|guidelines|prompt)\W+(?:that\W+)?you\W+(?:were|have\W+been"
    r"|got|received|are\W+given|are\W+following)"
    r"|(?:text|words|content|everything|instructions|prompt|message|messages)\W+(?:written\W+)?"
    r"(?:above|before\W+this|prior\W+to\W+this)"
    r"|(?:above|previous|prior|preceding)\W+(?:prompt|instructions|text|system\W+message)"
    r"|(?:the|this|entire|whole)\W+(?:\w+\W+)?conversation\W+(?:word\W+for\W+word|verbatim)"
    r"|(?:pre-?prompt|meta-?prompt|system\W+prompt\W+(?:verbatim|word\W+for\W+word|in\W+full))"
    r"|(?:initial|original|starting|hidden)\W+(?:instructions|configuration|prompt)"
    r"|system\W+(?:instructions|configuration))"
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

# (group, signal, level, label, start words, gate words, pattern). Within a
# group the first hit wins, so strong variants come first. Every alternative
# of a pattern begins with one of its start words.
_PHRASES: Final[tuple[tuple[str, str, int, str, str, str, str], ...]] = (
    # Explicit overrides of the reader's instructions.
    (
        "override",
        "override_instructions",
        _DENY,
        "instruction override",
        _OVERRIDE_STARTS,
        _OBJ_STRONG_WORDS,
        rf"{_NOT_NEGATED}\b{_OVERRIDE_VERB}\b{_GAP5}{_OVERRIDE_QUAL}\b{_GAP3}{_OBJ_STRONG}\b"
        rf"|{_NOT_NEGATED}\b{_OVERRIDE_VERB}\b{_GAP3}{_OBJ_STRONG}\W+(?:above|before|previously"
        r"|so\W+far|earlier|you\W+(?:were|have\W+been|got|received|had)"
        r"|given\W+(?:to\W+you|before|earlier))",
    ),
    (
        "override",
        "override_instructions",
        _DENY,
        "instruction override",
        "override overriding bypass bypassing skip dismiss circumvent",
        _OBJ_STRONG_WORDS,
        rf"{_NOT_NEGATED}\b{_OVERRIDE_VERB_POINTED}\b{_GAP3}{_OVERRIDE_QUAL_POINTED}\b{_GAP3}"
        rf"{_OBJ_STRONG}\b",
    ),
    (
        "override",
        "override_instructions",
        _DENY,
        "instruction override",
        "ignore disregard forget",
        "",
        # "ignore the above", "forget everything you were told"
        r"\b(?:ignore|disregard|forget)\W+(?:all\W+|everything\W+|anything\W+)?(?:of\W+)?(?:the\W+)?"
        r"(?:above|previous|prior|preceding|foregoing)(?:\W+(?:and|text|prompt|one|ones)\b"
        r"|\W*[.,;:!]|$)"
        r"|\b(?:ignore|disregard|forget)\W+(?:about\W+)?(?:all\W+|everything\W+)(?:that\W+)?"
        r"(?:you\W+(?:know|learned|learnt|were\W+told|have\W+been\W+told|were\W+taught)"
        r"|i(?:'ve|\W+have)?\W+(?:said|told\W+you|written)|(?:stated|said|written)\W+(?:above|before))"
        r"|\b(?:ignore|disregard|forget)\W+(?:all\W+|everything\W+|anything\W+)(?:\w+\W+){0,4}?"
        r"(?:before|above|prior\W+to)\W+(?:this|that|now|here)\b"
        r"|\b(?:ignore|disregard|forget)\W+(?:about\W+)?(?:all\W+|everything\W+|anything\W+)"
        r"(?:from\W+)?(?:before|previously|earlier)\W*(?:[.,;:!]|$)",
    ),
    (
        "override",
        "override_instructions",
        _REVIEW,
        "possible override",
        _OVERRIDE_STARTS,
        _OBJ_WEAK_WORDS,
        # "disregard my previous message" corrects the speaker's own words.
        rf"{_NOT_NEGATED}\b{_OVERRIDE_VERB}\b(?!\W+(?:my|our)\b){_GAP5}{_OVERRIDE_QUAL_POINTED}\b"
        rf"{_GAP3}{_OBJ_WEAK}\b",
    ),
    # New instructions announced as such, or a declared switch of the model.
    (
        "new_instructions",
        "override_instructions",
        _DENY,
        "injected new instructions",
        "new updated real actual revised overriding system begin start enter initiate end your"
        " the all allprevious",
        "instructions instruction directives directive prompt",
        r"\b(?:new|updated|real|actual|revised|overriding)[ ](?:system[ ])?(?:instructions?"
        r"|directives?|system[ ]prompt)[ ]?(?:is|are)?[ ]?:"
        r"|\bnew\W+system\W+prompt\b|\bsystem\W+prompt\W+(?:override|update|injection)\b"
        r"|\b(?:begin|start|enter|initiate)\W+new\W+instructions"
        r"|\bend\W+(?:of\W+)?(?:out\W+of\W+date|old|previous|system)\W+(?:instructions|prompt)\b"
        r"|\b(?:your|the)\W+(?:previous|prior|above|earlier|original)\W+instructions\W+(?:are|were)"
        r"\W+(?:false|void|cancel+ed|outdated|out\W+of\W+date|obsolete|revoked|no\W+longer)"
        r"|\ball\W*previous\W+instructions\W+are\b",
    ),
    (
        # Peers hand out tasks too; a "new" one replacing the current is a cue.
        "new_instructions",
        "override_instructions",
        _REVIEW,
        "announced new task",
        "your",
        "task goal objective instructions instruction rules orders purpose mission role",
        r"\byour[ ](?:new|real|actual|true)[ ](?:task|goal|objective|instructions?|rules|orders"
        r"|purpose|mission|role)[ ](?:is|are|will\W+be)\b",
    ),
    (
        "new_instructions",
        "override_instructions",
        _DENY,
        "injected new instructions",
        "begin start enter initiate admin administrator system developer root sudo safe safety"
        " restricted stop",
        "override reprogramming mode everything",
        r"\b(?:begin|start|enter|initiate)\W+(?:reprogramming|override\W+mode)"
        r"|\b(?:admin(?:istrator)?|system|developer|root|sudo)\W+override\b"
        r"|\b(?:safe|safety|restricted)\W+mode\W+(?:off|disabled|deactivated)\b"
        r"|\bstop\W+everything\b",
    ),
    (
        "new_instructions",
        "override_instructions",
        _DENY,
        "injected new instructions",
        "prompt model assistant ai bot",
        "hijacked compromised pwned hacked jailbroken reprogrammed",
        r"\b(?:prompt|model|assistant|ai|bot)\W+(?:has|have)\W+been\W+(?:\w+\W+){0,2}?(?:hijacked"
        r"|compromised|pwned|hacked|jailbroken|reprogrammed)\b",
    ),
    # Jailbreak personas: explicit "no rules apply to you" framings. Single
    # trigger words ("uncensored", "jailbreak") occur in benign text and are
    # left to the model; these phrases are not.
    (
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "do",
        "anything",
        r"\bdo\W+anything\W+now\b",
    ),
    (
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
    (
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
    (
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
    (
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
    (
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
    (
        "persona",
        "jailbreak_persona",
        _DENY,
        "jailbreak persona",
        "never cannot can will won must mustn shall not",
        "refuse decline deny",
        r"\b(?:never|cannot|can'?t|will\W+not|won'?t|must\W+not|mustn'?t|shall\W+not"
        r"|not\W+allowed\W+to)\W+(?:ever\W+)?(?:refuse|decline|deny)\W+(?:a\W+|any\W+|to\W+answer"
        r"|to\W+respond|my|the|requests?|questions?|prompts?|orders?|anything)",
    ),
    (
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
    (
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
    (
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
    (
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "never not don dont do can cannot without",
        "character",
        r"\b(?:never|not|don'?t|do\W+not|can'?t|cannot|without)\W+(?:ever\W+)?break(?:ing)?\W+"
        r"character\b",
    ),
    (
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
    (
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
    (
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "no",
        "immoral unethical illegal dangerous offensive inappropriate explicit",
        r"\bno\W+matter\W+how\W+(?:immoral|unethical|illegal|dangerous|offensive|inappropriate"
        r"|explicit)",
    ),
    (
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "two 2",
        "different separate distinct",
        r"\b(?:two|2)\W+(?:different|separate|distinct)\W+(?:responses|answers|ways|paragraphs)\b",
    ),
    (
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
    (
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "dan",
        "",
        # "[DAN]:" answer labels; a bare name in brackets is only a cue.
        r"(?<=\[)dan\b[^\]\n]{0,6}\]",
    ),
    (
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "opposite dan jailbreak jailbroken evil god chaos dev",
        "mode",
        r"\b(?:opposite|dan|jailbreak|jailbroken|evil|god|chaos|dev)\W+mode\b",
    ),
    (
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
    (
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
    (
        "persona",
        "jailbreak_persona",
        _REVIEW,
        "role-play jailbreak cue",
        "content",
        "policy policies",
        r"\bcontent\W+polic(?:y|ies)\b",
    ),
    # Requests for the hidden prompt or private context.
    (
        "extract",
        "prompt_extraction",
        _DENY,
        "hidden prompt request",
        _EXTRACT_VERBS,
        "instructions instruction prompt prompts prompting preprompt metaprompt configuration"
        " directive directives rules guidelines message messages context parameters settings"
        " programming above conversation verbatim",
        rf"\b{_EXTRACT_VERB}\b{_GAP5}{_EXTRACT_TARGET_OWN}\b",
    ),
    (
        "extract",
        "prompt_extraction",
        _DENY,
        "hidden prompt request",
        "what beginning the opposite reverse",
        "instructions prompt directives message told instructed programmed asked supposed allowed"
        " permitted repeat print output write opposite reverse",
        r"\bwhat\W+(?:is|are|were|was)\W+(?:in\W+)?your\W+(?:\w+\W+)?(?:instructions|system\W+prompt"
        r"|prompt|directives|system\W+message)\b(?!\W+(?:for|on|about|regarding|when|if)\b)"
        r"|\bwhat\W+(?:were|have)\W+you\W+(?:been\W+)?(?:told|instructed|programmed|asked)\W+"
        r"(?:to\W+do\W+)?(?:before|at\W+the\W+(?:start|beginning)|initially|originally)\b"
        r"|\bwhat\W+are\W+you\W+not\W+(?:supposed|allowed|permitted)\W+to\W+(?:tell|say|reveal"
        r"|share)"
        r"|\bbeginning\W+with\W+\W*you\W+are\b\W*(?:\w+\W+){0,2}?(?:repeat|print|output|write)"
        r"|\bthe\W+system\W+prompt\W+(?:is|was|says|reads)\W*:"
        r"|\b(?:opposite|reverse)\W+of\W+your\W+(?:system\W+)?(?:instructions|prompt|rules)\b",
    ),
    (
        "extract",
        "prompt_extraction",
        _REVIEW,
        _EXTRACT_GENERIC_LABEL,
        _EXTRACT_VERBS,
        "prompt message instructions",
        rf"\b{_EXTRACT_VERB}\b{_GAP3}(?:the|a|any)\W+(?:system\W+prompt|system\W+message"
        r"|system\W+instructions|initial\W+prompt|hidden\W+prompt)\b",
    ),
    # Secrets of the reading agent or its host.
    (
        "secret",
        "prompt_extraction",
        _DENY,
        "secret request",
        "print reveal show tell give output display dump send leak expose share disclose email"
        " post upload provide exfiltrate read what api secret access auth authentication bearer"
        " credentials password passwords passphrase passphrases env environment private ssh"
        " session secrets usernames",
        _SECRET_NOUNS,
        r"\b(?:print|reveal|show|tell|give|output|display|dump|send|leak|expose|share"
        r"|disclose|email|post|upload|provide|exfiltrate|read\W+out|what\W+(?:is|are))\b"
        rf"{_GAP5}(?:your|all\W+(?:of\W+)?(?:your|the)|the\W+(?:system|server|host|environment)"
        rf"(?:'s)?)[ ](?:\w+[ ]){{0,2}}?{_SECRET_NOUN}"
        rf"|{_SECRET_NOUN}\W+(?:in|from|of|stored\W+in|inside)\W+your\W+(?:database|memory|system"
        r"|context|environment|config(?:uration)?|files?|prompt|instructions)",
    ),
    # Sending private context somewhere: an address or URL is the tell.
    (
        "exfil",
        "data_exfiltration",
        _DENY,
        "exfiltration request",
        "send forward email e mail post upload transmit exfiltrate leak copy",
        "conversation history inbox credentials password passwords secret secrets key keys"
        " token tokens contacts memory context prompt instructions",
        r"\b(?:send|forward|email|e-mail|mail|post|upload|transmit|exfiltrate|leak|copy)\b"
        r"(?:[^\w.!?;]+\w+){0,8}?[^\w.!?;]+(?:conversation|chat\W+history|history|inbox"
        r"|credentials|passwords?|secrets?|api\W?keys?|tokens?|contacts|memory|context"
        r"|system\W+prompt|instructions)\b(?:[^\w.!?;]+\w+){0,6}?[^\w.!?;]+to\W+"
        r"(?:[\w.+-]+@[\w-]+\.\w|https?://|the\W+(?:following|url|address))",
    ),
    # Hiding the action from the person the agent works for.
    (
        "conceal",
        "concealment",
        _REVIEW,
        "hide from the user",
        "do don dont never without",
        "user users human humans operator operators rule instruction message",
        r"\b(?:do\W+not|don'?t|dont|never|without)\W+(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?"
        r"|reveal(?:ing)?|notify(?:ing)?|alert(?:ing)?|let(?:ting)?|warn(?:ing)?)\W+(?:\w+\W+){0,2}?"
        r"(?:the\W+)?(?:user|human|operator)s?\b"
        r"|\b(?:do\W+not|don'?t|dont)\W+(?:repeat|mention|reveal)\W+this\W+(?:rule|instruction"
        r"|message)",
    ),
    (
        "action",
        "tool_execution",
        _REVIEW,
        "unrequested action",
        "execute run delete",
        "command access",
        r"\b(?:execute|run)\W+the\W+following\W+system\W+command\b"
        r"|\bdelete\W+all\W+(?:of\W+)?(?:the\W+)?(?:data|files|emails|records)\W+you\W+have\W+"
        r"access\W+to\b",
    ),
    # Claimed authority over the reader.
    (
        "impersonate",
        "role_impersonation",
        _REVIEW,
        "claimed authority",
        "i message instructions instruction note update this",
        "developer developers creator administrator admin owner programmer maker operator"
        " exception engineer employee researcher system openai anthropic",
        r"\bi(?:'m|\W+am)\W+(?:your|the)\W+(?:developer|creator|administrator|admin|owner|programmer"
        r"|maker|operator|system\W+administrator)\b"
        r"|\b(?:message|instructions?|note|update)\W+from\W+(?:the\W+)?(?:system|developers?|openai"
        r"|anthropic|administrator|admin)\W*:"
        r"|\bthis\W+(?:chat|conversation|session)\W+is\W+an\W+exception\W+to\b"
        r"|\bi(?:'m|\W+am)\W+(?:a|an|the)\W+(?:\w+\W+)?(?:developer|programmer|engineer|employee"
        r"|researcher)\W+(?:at|from|for|of)\W+(?:openai|anthropic|google\W+deepmind"
        r"|the\W+company\W+that\W+(?:made|built|trained|created)\W+you)\b",
    ),
)

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

# Encoded payloads. Candidates are decoded and, if they turn out to be text,
# run through the same phrase rules.
_B64_BLOB: Final = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")
_HEX_BLOB: Final = re.compile(r"[0-9a-fA-F]{32,}")
_HEX_ESCAPES: Final = re.compile(r"(?:\\x[0-9a-fA-F]{2}){8,}")
# URL-encoded text: escapes with plain characters between them.
_PCT_RUN: Final = re.compile(r"(?:[A-Za-z0-9._~+-]{0,24}%[0-9a-fA-F]{2}){6,}[A-Za-z0-9._~+-]*")
_ENTITY_RUN: Final = re.compile(r"(?:&#x?[0-9a-fA-F]{1,6};){8,}")
# rot13 of words that carry instructions: checking the word set costs nothing.
_ROT13_HINTS: Final = frozenset(
    {
        "vtaber",
        "vafgehpgvbaf",
        "vafgehpgvba",
        "cerivbhf",
        "flfgrz",
        "cebzcg",
        "qvfertneq",
        "sbetrg",
        "erirny",
        "cevag",
    }
)

_ZW_RUN: Final = re.compile("[\u200b\u200c\u200d\u2060\ufeff]{4,}")
_ZW_SPLIT: Final = re.compile("[A-Za-z][\u200b\u200c\u200d\u2060\ufeff\u00ad]+[A-Za-z]")
_BIDI_OVERRIDE: Final = re.compile("[\u202d\u202e]")
_BIDI_ANY: Final = re.compile("[\u202a-\u202e\u2066-\u2069]")
_RTL_LETTER: Final = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_TAG_RUN: Final = re.compile("[\U000e0000-\U000e007f]+")
_BLACK_FLAG: Final = "\U0001f3f4"


# --------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    group: str  # the first hit of a group wins (strong variants come first)
    signal: str
    level: int
    label: str
    pattern: re.Pattern[str]
    starts: frozenset[str]  # a match is tried only where one of these begins a word
    gate: frozenset[str] = frozenset()  # one of these words must occur somewhere


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


_PHRASE_RULES: Final = tuple(
    _Rule(
        group,
        signal,
        level,
        label,
        re.compile(pattern),
        frozenset(starts.split()),
        frozenset(gate.split()),
    )
    for group, signal, level, label, starts, gate, pattern in _PHRASES
)
# Indexed by each rule's rarer word set, so a text pays one set intersection
# for all phrase rules together.
_TRIGGERS: Final = frozenset().union(*((r.gate or r.starts) for r in _PHRASE_RULES))
_TRIGGER_INDEX: Final[dict[str, tuple[int, ...]]] = {
    word: tuple(i for i, r in enumerate(_PHRASE_RULES) if word in (r.gate or r.starts))
    for word in _TRIGGERS
}


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


@dataclass(frozen=True, slots=True)
class _Hit:
    signal: str
    level: int
    label: str
    quote: str


def _quote(text: str) -> str:
    # Printable only, so a reason never smuggles control or invisible chars.
    clean = "".join(c if c.isprintable() else " " for c in text[: _QUOTE_MAX * 2])
    clean = " ".join(clean.split())
    return clean if len(clean) <= _QUOTE_MAX else clean[: _QUOTE_MAX - 1] + "…"


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


def _match_at_starts(rule: _Rule, s: str, keys: list[str]) -> re.Match[str] | None:
    """Try the pattern only where one of `keys` begins a word."""
    match = rule.pattern.match
    for key in keys:
        i = s.find(key)
        while i != -1:
            if i == 0 or not s[i - 1].isalnum():
                m = match(s, i)
                if m:
                    return m
            i = s.find(key, i + 1)
    return None


def _apply_phrases(low: str, words: set[str]) -> list[_Hit]:
    present = _TRIGGERS.intersection(words)
    if not present:
        return []
    todo = sorted({i for word in present for i in _TRIGGER_INDEX[word]})
    hits: list[_Hit] = []
    done: set[str] = set()
    s = ""
    for i in todo:
        rule = _PHRASE_RULES[i]
        if rule.group in done:
            continue
        keys = [w for w in rule.starts if w in words]
        if not keys:
            continue
        # Whitespace is collapsed only for text that reaches a pattern.
        s = s or " ".join(low.split())
        m = _match_at_starts(rule, s, keys)
        if m is None:
            continue
        if rule.label == _EXTRACT_GENERIC_LABEL and _HOWTO.search(
            s, max(0, m.start() - 40), m.start()
        ):
            # "how to set the system prompt" is a question about a product.
            continue
        hits.append(_Hit(rule.signal, rule.level, rule.label, m.group()))
        done.add(rule.group)
    return hits


def _phrase_hits(low: str, words: set[str]) -> list[_Hit]:
    hits = _apply_phrases(low, words)
    if hits:
        return hits
    # Leetspeak can only hide a trigger in a word that mixes letters and digits.
    mixed = [w for w in words if not w.isalpha() and not w.isdigit()]
    if not mixed or _TRIGGERS.isdisjoint({w.translate(_LEET) for w in mixed}):
        return hits
    leet = low.translate(_LEET)
    return _apply_phrases(leet, set(_tokens(leet)))


def _template_hits(text: str, low: str, words: set[str]) -> list[_Hit]:
    hits: list[_Hit] = []
    marks = [c for c in _TEMPLATE_CHARS if c in low]
    if marks:
        for rule in _TEMPLATE_RULES:
            keys = [*rule.anchors.intersection(words)]
            keys += [x for x in rule.literals if x[0] in marks and x in low]
            m = _search_windows(rule, low, keys) if keys else None
            if m:
                hits.append(_Hit(rule.signal, rule.level, rule.label, m.group()))
                break
    if not hits and "INST]" in text:
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


def _invisible_hits(text: str) -> tuple[list[_Hit], list[str]]:
    """Hidden-character findings, plus any text smuggled in tag characters."""
    hits: list[_Hit] = []
    hidden: list[str] = []
    for m in _TAG_RUN.finditer(text):
        run = m.group()
        # Subdivision flags (England, Scotland, Wales) are black flag + tags.
        if m.start() > 0 and text[m.start() - 1] == _BLACK_FLAG and len(run) <= 8:
            continue
        decoded = "".join(chr(ord(c) - _TAG_FIRST) for c in run if ord(c) - _TAG_FIRST >= 0x20)
        hidden.append(decoded)
        level = _DENY if len(decoded) >= 4 else _REVIEW
        hits.append(_Hit("invisible_unicode", level, "hidden tag-character text", decoded))
        if len(hidden) >= _MAX_BLOBS:
            break
    if _ZW_RUN.search(text):
        hidden.extend(_decode_zero_width(text))
        hits.append(_Hit("invisible_unicode", _REVIEW, "zero-width run", ""))
    elif len(_ZW_SPLIT.findall(text)) >= 3:
        hits.append(_Hit("invisible_unicode", _REVIEW, "zero-width characters inside words", ""))
    if _BIDI_OVERRIDE.search(text):
        hits.append(_Hit("invisible_unicode", _REVIEW, "bidi override", ""))
    elif _BIDI_ANY.search(text) and not _RTL_LETTER.search(text):
        # Embeddings and isolates are legitimate around right-to-left text;
        # without any, they only serve to reorder what a reviewer sees.
        hits.append(_Hit("invisible_unicode", _REVIEW, "bidi control without RTL text", ""))
    return hits, hidden


def _decode_zero_width(text: str) -> Iterator[str]:
    """Zero-width steganography: two invisible characters used as bits."""
    for count, m in enumerate(_ZW_RUN.finditer(text)):
        if count >= _MAX_BLOBS:
            return
        run = m.group()[: _BLOB_DECODE_CHARS * 8]
        chars = sorted(set(run))
        if len(run) < 64 or len(chars) != 2:
            continue
        for zero, one in ((chars[0], chars[1]), (chars[1], chars[0])):
            bits = run.replace(zero, "0").replace(one, "1")
            data = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits) - 7, 8))
            decoded = _as_text(data)
            if decoded:
                yield decoded


def _as_text(data: bytes) -> str | None:
    """Decoded bytes that read as text, else None (images, hashes, keys)."""
    if len(data) < 8:
        return None
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\r\t")
    letters = sum(1 for c in decoded if c.isalpha() or c == " ")
    if printable < 0.95 * len(decoded) or letters < 0.6 * len(decoded) or " " not in decoded:
        return None
    return decoded


def _b64_text(blob: str) -> str | None:
    head = blob[:_BLOB_DECODE_CHARS].rstrip("=")
    head = head[: len(head) - len(head) % 4]
    try:
        if "-" in head or "_" in head:
            data = base64.urlsafe_b64decode(head)
        else:
            data = base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _as_text(data)


def _hex_text(blob: str) -> str | None:
    digits = blob[:_BLOB_DECODE_CHARS]
    try:
        return _as_text(bytes.fromhex(digits[: len(digits) - len(digits) % 2]))
    except ValueError:
        return None


def _escape_text(blob: str) -> str | None:
    return _hex_text(blob.replace("\\x", ""))


def _pct_text(blob: str) -> str | None:
    text = unquote(blob[:_BLOB_DECODE_CHARS].replace("+", " "))
    return _as_text(text.encode("utf-8", "surrogatepass"))


def _entity_text(blob: str) -> str | None:
    return _as_text(html.unescape(blob[:_BLOB_DECODE_CHARS]).encode("utf-8", "surrogatepass"))


def _blob_spans(text: str, low: str, toks: list[str]) -> Iterator[tuple[int, int]]:
    """Where base64 or hex blobs may sit: around long runs of letters and digits."""
    if max(map(len, toks), default=0) < _LONG_TOKEN:
        return
    if not text.isascii():
        # Offsets in the casefolded text would not match; scan it all.
        yield 0, len(text)
        return
    seen: set[str] = set()
    for tok in toks:
        # Encoded runs mix letters and digits; identifiers and numbers do not.
        if len(tok) < _LONG_TOKEN or tok in seen or tok.isalpha() or tok.isdigit():
            continue
        seen.add(tok)
        at = low.find(tok)
        # A blob starts a little before its first long run of letters and
        # digits; reach back so that base64 keeps its 4-character alignment.
        yield max(0, at - 256), at + len(tok) + _BLOB_DECODE_CHARS
        if len(seen) >= _MAX_BLOBS:
            return


_BLOB_DECODERS: Final[tuple[tuple[re.Pattern[str], Callable[[str], str | None]], ...]] = (
    (_B64_BLOB, _b64_text),
    (_HEX_BLOB, _hex_text),
)


def _decoded_candidates(text: str, low: str, toks: list[str], words: set[str]) -> Iterator[str]:
    """Text hidden in base64, hex, percent/entity escapes or rot13."""
    budget = _MAX_BLOBS
    covered = -1
    for lo, hi in _blob_spans(text, low, toks):
        if hi <= covered:
            continue
        for pattern, decode in _BLOB_DECODERS:
            m = pattern.search(text, max(lo, covered), hi)
            # A run of letters only is a word or identifier, not an encoding.
            if m is None or m.group().isalpha():
                continue
            decoded = decode(m.group())
            if decoded:
                yield decoded
            budget -= 1
            if budget <= 0:
                return
        covered = hi
    escapes: list[tuple[re.Pattern[str], Callable[[str], str | None]]] = []
    if "\\x" in text:
        escapes.append((_HEX_ESCAPES, _escape_text))
    if "%" in text:
        escapes.append((_PCT_RUN, _pct_text))
    if "&#" in text:
        escapes.append((_ENTITY_RUN, _entity_text))
    for pattern, decode in escapes:
        for m in pattern.finditer(text):
            decoded = decode(m.group())
            if decoded:
                yield decoded
            budget -= 1
            if budget <= 0:
                return
    if not _ROT13_HINTS.isdisjoint(words):
        yield codecs.decode(" ".join(low[: _BLOB_DECODE_CHARS * 8].split()), "rot13")


def _hidden_instruction(decoded: str) -> bool:
    low = _casefolded(decoded)
    inner = _phrase_hits(low, set(_tokens(low)))
    return any(h.level == _DENY for h in inner) or len(inner) >= 2


# --------------------------------------------------------------------------
# Statistical model
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Model:
    bias: float
    weights: dict[str, float]
    aliases: dict[str, str]
    review_at: float
    deny_at: float

    def score(self, toks: list[str], words: set[str] | None = None) -> float:
        """Probability-like score in [0, 1]: the max over bounded word windows."""
        if len(toks) <= _MODEL_WINDOW and words is not None:
            return self._score_words(words)
        best = 0.0
        for start in range(0, min(len(toks), _MODEL_MAX_WORDS), _MODEL_WINDOW):
            best = max(best, self._score_words(set(toks[start : start + _MODEL_WINDOW])))
        return best

    def _score_words(self, words: set[str]) -> float:
        # A handful of words is no evidence either way (and "ignore ignore
        # ignore" would score on one weight); short attacks are the rules' job.
        if len(words) < _MODEL_MIN_WORDS:
            return 0.0
        if not self.aliases.keys().isdisjoint(words):
            words = {self.aliases.get(w, w) for w in words}
        total = sum(map(self.weights.get, words, repeat(0.0)))
        # Normalised by all distinct words, known or not (as in training), so
        # unfamiliar text (code, other languages) stays near the bias.
        z = self.bias + total / math.sqrt(len(words))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def _load_model() -> _Model | None:
    try:
        raw = resources.files(__package__).joinpath("injection_model.json").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return None
    data = json.loads(raw)
    return _Model(
        bias=float(data["bias"]),
        weights={str(k): float(v) for k, v in data["weights"].items()},
        aliases={str(k): str(v) for k, v in data.get("aliases", {}).items()},
        review_at=float(data["review_at"]),
        deny_at=float(data["deny_at"]),
    )


_MODEL: Final = _load_model()


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def _rules(text: str) -> tuple[list[_Hit], list[str], set[str]]:
    """Rule hits, the words of the text, and its distinct words."""
    invisible = not text.isascii() and _INVISIBLE_ANY.search(text) is not None
    low = _casefolded(text, invisible)
    toks = _tokens(low)
    words = set(toks)
    hits: list[_Hit] = []
    hidden: list[str] = []
    if invisible:
        hits, hidden = _invisible_hits(text)
    hits.extend(_template_hits(text, low, words))
    hits.extend(_phrase_hits(low, words))
    if any(_hidden_instruction(h) for h in hidden):
        hits.append(_Hit("encoded_instruction", _DENY, "hidden instruction", ""))
    elif not any(h.level == _DENY for h in hits):
        for decoded in _decoded_candidates(text, low, toks, words):
            if _hidden_instruction(decoded):
                hits.append(_Hit("encoded_instruction", _DENY, "encoded instruction", ""))
                break
    return hits, toks, words


def rule_hits(text: str) -> list[tuple[str, str]]:
    """(signal, level) of every rule that fires; for tests and benchmarks."""
    return [(h.signal, "deny" if h.level == _DENY else "review") for h in _rules(text)[0]]


def model_score(text: str) -> float:
    """The statistical score alone, for benchmarks and threshold tuning."""
    if _MODEL is None:
        return 0.0
    toks = _tokens(_normalise(text))
    return _MODEL.score(toks, set(toks))


def assess(text: str) -> InjectionAssessment:
    """Classify one untrusted text segment."""
    if not text or text.isspace():
        return _ALLOW
    hits, toks, words = _rules(text)
    level = max((h.level for h in hits), default=0)
    if _MODEL is not None and level < _DENY:
        p = _MODEL.score(toks, words)
        if p >= _MODEL.deny_at:
            hits.append(_Hit("model_score", _DENY, f"classifier score {p:.2f}", ""))
        elif p >= _MODEL.review_at:
            hits.append(_Hit("model_score", _REVIEW, f"classifier score {p:.2f}", ""))
    if not hits:
        return _ALLOW
    signals = tuple(dict.fromkeys(h.signal for h in hits))
    level = max(h.level for h in hits)
    # Two independent signals make an explicit attack more likely than a
    # coincidence, so two reviews add up to a deny.
    if level == _REVIEW and len(signals) >= 2:
        level = _DENY
    top = max(hits, key=lambda h: h.level)
    reason = top.label + (f": '{_quote(top.quote)}'" if top.quote else "")
    if len(signals) > 1:
        reason += f" (+{len(signals) - 1} more signal{'s' if len(signals) > 2 else ''})"
    return InjectionAssessment("deny" if level == _DENY else "review", CATEGORY, reason, signals)
