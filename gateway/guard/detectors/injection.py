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

Cost: the gateway runs this on every new tool result, so clean text must
cost little more than reading its words. CPython's regex engine spends
~10 ns on every character it scans, while ``str``/``bytes`` methods, ``in``
and set operations cost far less, so no regex scans the whole text:

* the text is casefolded and split into words once (C-level passes); one set
  intersection with the rules' key words finds the few that can start a rule,
  and the model sums its weights over the distinct words;
* each phrase rule is split into its top-level alternatives, and the words
  that every match of an alternative must contain are derived from the regex
  when the module loads (``_Shapes``, ``_Ways``); the rarest of them index
  it, so an alternative is tried only when all its needed words occur, and
  then only where one of its start words begins a word. Template rules are
  gated the same way before their window search;
* leetspeak is a lookup of the text's words among the leet spellings of the
  trigger words; base64 / hex blobs only in runs of 16+ letters and digits
  mixed (found by a translate and a find), escapes only when their opener
  occurs;
* non-ASCII text whose only non-ASCII characters are typographic quotes and
  dashes takes the ASCII path; other text pays for NFKC and casefolding,
  and for homoglyph and invisible-character handling only when one-character
  and byte searches say those can matter.

The derived gates only ever skip work that cannot match, so decisions are
those of the plain rules. All regexes use bounded repetition over disjoint
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
import sys
import unicodedata
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from importlib import resources
from itertools import product, repeat
from typing import Final, Literal, NamedTuple
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
_INVISIBLE_BMP: Final = _ZERO_WIDTH + _BIDI
# Tag characters in UTF-8 (U+E0000..U+E007F all start with these bytes).
_TAG_UTF8: Final = b"\xf3\xa0"

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
_MIXED_SCRIPT: Final = re.compile(f"[a-z][{_LOOKALIKES}]|[{_LOOKALIKES}][a-z]")
# A look-alike's UTF-8 starts with one of these bytes, and a Latin letter is
# one of a-z: memchr-speed necessary conditions for the regex above.
_LOOKALIKE_LEADS: Final = tuple(dict.fromkeys(c.encode()[:1] for c in _LOOKALIKES))
_NOT_LATIN: Final = bytes(b for b in range(256) if not 0x61 <= b <= 0x7A)
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

# Words are split at ASCII punctuation and whitespace ("openai's" -> "openai",
# "s"); bytes of multi-byte characters pass through, so this is one C pass.
_ASCII_SEP: Final = bytes(b if chr(b).isalnum() else 32 for b in range(128)) + bytes(
    range(128, 256)
)
_WORD: Final = re.compile(r"[^\W_]+")


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


# CPython stores a string at four bytes per character exactly when it holds
# a character above U+FFFF (tags, emoji), which `sys.getsizeof` shows in
# constant time. With another string layout, every string may.
_UCS4_OVERHEAD: Final = sys.getsizeof("\U00010000") - 8
_SIZE_SHOWS_WIDTH: Final = (
    sys.getsizeof("a\U00010000") - _UCS4_OVERHEAD == 12
    and sys.getsizeof("\uffff" * 3) - _UCS4_OVERHEAD < 16
)


def _may_be_astral(text: str) -> bool:
    return not _SIZE_SHOWS_WIDTH or sys.getsizeof(text) - _UCS4_OVERHEAD >= 4 * (len(text) + 1)


def _has_invisible(text: str) -> bool:
    """Whether `text` holds a zero-width, bidi or tag character."""
    # Twenty one-character searches (memchr-like) and one byte search beat
    # a regex scan, which costs ~10 ns per character.
    return any(map(text.__contains__, _INVISIBLE_BMP)) or (
        _may_be_astral(text) and _TAG_UTF8 in text.encode("utf-8", "surrogatepass")
    )


def _fold(text: str, invisible: bool, plain: bool = False) -> tuple[str, bytes]:
    """Casefolded non-ASCII text, and its UTF-8 (which the word split reads).

    `plain`: the typographic punctuation of `text` is already replaced.
    """
    low = text.translate(_STRIP_TABLE) if invisible else text
    if not unicodedata.is_normalized("NFKC", low):
        low = unicodedata.normalize("NFKC", low)
        plain = False  # NFKC can make such punctuation ("\ufe58" -> "\u2014")
    low = low.casefold()
    if low.isascii():
        return low, low.encode("ascii")
    if not plain:
        low = _plain_punctuation(low)
    raw = low.encode("utf-8", "surrogatepass")
    # Translating costs a dict lookup per character, and only a word that
    # mixes Latin with look-alike letters ("іgnore") needs it; byte checks
    # rule out English and all-Cyrillic text before the regex scan.
    if (
        any(map(raw.__contains__, _LOOKALIKE_LEADS))
        and raw.translate(None, _NOT_LATIN)
        and _MIXED_SCRIPT.search(low)
    ):
        low = low.translate(_HOMOGLYPHS)
        raw = low.encode("utf-8", "surrogatepass")
    return low, raw


def _plain_punctuation(text: str) -> str:
    for char, repl in _PUNCT:
        text = text.replace(char, repl)
    return text


def _casefolded(text: str, invisible: bool | None = None) -> str:
    """NFKC, casefold, homoglyphs mapped, invisibles stripped; layout kept."""
    if text.isascii():
        return text.lower()
    if invisible is None:
        invisible = _has_invisible(text)
    return _fold(text, invisible)[0]


def _normalise(text: str) -> str:
    """Casefolded with whitespace collapsed: what the phrase rules read."""
    return " ".join(_casefolded(text).split())


def _split_words(low: str, raw: bytes) -> list[str]:
    """Words of casefolded `low`, whose UTF-8 is `raw`."""
    split = raw.translate(_ASCII_SEP)
    if len(raw) == len(low):
        return split.decode("ascii").split()
    fast = split.decode("utf-8", "surrogatepass").split()
    # One C pass over the joined words instead of a method call per word.
    if "".join(fast).isalnum():
        return fast
    words: list[str] = []
    for word in fast:
        if word.isalnum():
            words.append(word)
        else:
            # Emoji and other symbols glued to a word ("🔓jailbreak").
            words.extend(_WORD.findall(word))
    return words


def _tokens(s: str) -> list[str]:
    """Words of casefolded text; the same split the model was trained on."""
    if s.isascii():
        return s.encode("ascii").translate(_ASCII_SEP).decode("ascii").split()
    return _split_words(s, s.encode("utf-8", "surrogatepass"))


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
        "|".join(rf"\b{_EXTRACT_VERB}\b{_GAP5}{target}\b" for target in _EXTRACT_TARGETS_OWN),
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
        # The noun ends a word ("your api keyring" is no key), which also
        # lets the word gate (see _Ways) require it.
        r"\b(?:print|reveal|show|tell|give|output|display|dump|send|leak|expose|share"
        r"|disclose|email|post|upload|provide|exfiltrate|read\W+out|what\W+(?:is|are))\b"
        rf"{_GAP5}(?:your|all\W+(?:of\W+)?(?:your|the)|the\W+(?:system|server|host|environment)"
        rf"(?:'s)?)[ ](?:\w+[ ]){{0,2}}?{_SECRET_NOUN}\b"
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
_HEX_ESCAPES: Final = re.compile(r"(?:\\x[0-9a-fA-F]{2}){8,}")
# URL-encoded text: escapes with plain characters between them.
_PCT_RUN: Final = re.compile(r"(?:[A-Za-z0-9._~+-]{0,24}%[0-9a-fA-F]{2}){6,}[A-Za-z0-9._~+-]*")
_PCT_ESCAPE: Final = re.compile(r"%[0-9a-fA-F]{2}")  # a literal opener: a fast scan
_PCT_GAP: Final = 24  # plain characters allowed between two escapes of a run
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
# Words a pattern's matches must contain
# --------------------------------------------------------------------------
#
# A regex is too slow to run over every text, but most texts lack some word
# that every match of a phrase needs ("ignore ... previous ... instructions").
# Those words are read off the pattern itself, so that a rule edit can never
# leave a stale hand-written gate behind. The analysis is an
# over-approximation: it may miss required words (and then gate less), but
# every word it reports is one that a match cannot do without, given that
# words are maximal runs of alphanumeric characters (as in `_split_words`).

_RUN_CAP: Final = 64  # spellings tracked for one partial word
_SHAPE_CAP: Final = 32  # shapes tracked for one fragment before merging them
# Punctuation rare enough in ordinary text to be worth a substring check.
_RARE_PUNCT: Final = frozenset("@[]<>|{}`~^\\")
# A need that is a substring of the text rather than a whole word.
_SUBSTRING: Final = "\0"
_MAX_SUBSTRINGS: Final = 2

_Strs = frozenset[str] | None  # possible spellings; None: unknown
_Needs = frozenset[frozenset[str]]  # each set: one of these must occur


# How often the words that rules need occur in ordinary text: the percentage
# of 2 KB pieces (of Python stdlib source and docs, the benign corpora and
# bench text) that contain them, for those in at least 1%. Rules are looked
# up by their rarest needed words, so this decides speed only, never what
# matches.
def _percentages(spaced: str) -> dict[str, int]:
    return {word: int(pct) for word, _, pct in (item.partition(":") for item in spaced.split())}


_PERCENT_OF_TEXTS: Final = _percentages(
    "the:63 to:48 in:47 a:45 for:44 and:44 of:43 is:37 from:28 with:28 you:25 s:25 i:24"
    " that:24 this:24 return:23 as:20 can:20 on:20 an:20 be:19 not:19 are:19 by:15 any:13"
    " 2:13 my:12 all:12 how:10 at:10 list:10 key:10 id:9 need:9 should:9 what:9 start:8"
    " t:8 m:8 will:8 true:8 set:8 type:8 have:8 your:7 request:7 which:7 has:7 new:7 api:6"
    " user:6 about:6 like:6 warn:6 re:6 provide:6 so:5 must:5 message:5 update:5 no:5"
    " its:5 token:5 data:5 write:5 was:5 text:5 model:5 before:5 delete:5 these:5 end:5"
    " who:5 let:5 context:5 copy:4 current:4 default:4 https:4 do:4 version:4 now:4"
    " task:4 given:4 without:4 response:4 information:4 read:4 here:4 header:4 out:4"
    " output:4 http:4 session:4 input:4 first:3 memory:3 been:3 auth:3 policy:3"
    " parameters:3 warning:3 history:3 does:3 character:3 send:3 server:3 stop:3 post:3"
    " never:3 filter:3 env:3 two:3 prompt:3 internal:2 tool:2 ignore:2 note:2 named:2"
    " language:2 put:2 describe:2 begin:2 access:2 exception:2 content:2 rules:2 ai:2"
    " state:2 share:2 following:2 mode:2 don:2 required:2 ethical:2 real:2 orders:2"
    " take:2 system:2 role:2 were:2 full:2 run:2 users:2 files:2 doesn:2 different:2"
    " break:2 keys:2 root:2 guidelines:2 sys:1 print:1 old:1 original:1 am:1 command:1"
    " responses:1 those:1 needs:1 mind:1 ll:1 human:1 environment:1 called:1 every:1"
    " initial:1 everything:1 off:1 free:1 date:1 encode:1 allowed:1 settings:1 safety:1"
    " tell:1 private:1 give:1 complete:1 safe:1 operator:1 previous:1 law:1 ways:1 got:1"
    " above:1 protocol:1 back:1 assistant:1 reverse:1 made:1 limitations:1 created:1"
    " password:1 conversation:1 become:1 variables:1 updated:1 show:1 forward:1"
    " existing:1 configuration:1 bound:1 secret:1 email:1 company:1 cannot:1 word:1"
    " purpose:1 entity:1 boundaries:1 isn:1 constraints:1 attention:1 override:1 meta:1"
    " follow:1 display:1 words:1 won:1 question:1 messages:1 initiate:1 earlier:1"
)


def _rarity(need: AbstractSet[str]) -> tuple[float, int]:
    """Expected cost of a need as an index key: lower is rarer."""
    if not all(w.isalnum() for w in need):
        return math.inf, 0  # substrings cannot be looked up in the word set
    return sum(_PERCENT_OF_TEXTS.get(w, 0.3) for w in need), len(need)


class _Shape(NamedTuple):
    """What a regex fragment can match, as far as whole words go.

    Without a separator (non-alphanumeric character or word boundary) in the
    match, `head` holds its possible texts. With one, `head` and `tail` are
    the possible partial words before the first and after the last
    separator, and `needs` the words the match contains whole. A need with
    punctuation in it is a substring of the text instead of a word.
    """

    split: bool
    head: _Strs
    needs: _Needs
    tail: _Strs


_EMPTY: Final = _Shape(False, frozenset({""}), frozenset(), None)
_ANY_RUN: Final = _Shape(False, None, frozenset(), None)
_ANY_SPLIT: Final = _Shape(True, None, frozenset(), None)
_SEPARATOR: Final = _Shape(True, frozenset({""}), frozenset(), frozenset({""}))


def _join(a: _Strs, b: _Strs) -> _Strs:
    if a is None or b is None:
        return None
    out = frozenset(x + y for x in a for y in b)
    return out if len(out) <= _RUN_CAP else None


def _union(a: _Strs, b: _Strs) -> _Strs:
    if a is None or b is None:
        return None
    out = a | b
    return out if len(out) <= _RUN_CAP else None


def _covers(a: _Strs, b: _Strs) -> bool:
    return a is None or (b is not None and b <= a)


def _concat(x: _Shape, y: _Shape) -> _Shape:
    if not x.split:
        if not y.split:
            return _Shape(False, _join(x.head, y.head), frozenset(), None)
        return _Shape(True, _join(x.head, y.head), y.needs, y.tail)
    if not y.split:
        return _Shape(True, x.head, x.needs, _join(x.tail, y.head))
    needs = x.needs | y.needs
    word = _join(x.tail, y.head)
    # Separators on both sides make the partial words meeting here whole,
    # unless one of them can be empty (then no word need sit here).
    if word is not None and "" not in word:
        needs |= {word}
    return _Shape(True, x.head, needs, y.tail)


def _closest(term: _Needs, need: frozenset[str]) -> frozenset[str]:
    """The need of `term` sharing most words with `need` (then the rarest)."""
    return max(term, key=lambda n: (len(n & need), -_rarity(n)[0], sorted(n)))


def _weaken(terms: list[_Needs]) -> _Needs:
    """Needs implied by any one of `terms` (an OR of ANDs made an AND of ORs).

    For each need of any term, the union of the closest need of every other
    term: each term implies its pick, so every term implies the union.
    """
    if not all(terms):
        return frozenset()
    out: set[frozenset[str]] = set()
    for need in set[frozenset[str]]().union(*terms):
        union = set(need)
        for term in terms:
            if need not in term:
                union |= _closest(term, need)
        out.add(frozenset(union))
    # A need that is a superset of another is implied by it.
    return frozenset(n for n in out if not any(o < n for o in out))


def _merge(shapes: list[_Shape]) -> list[_Shape]:
    """Fewer shapes that together still describe every match."""
    runs = [s for s in shapes if not s.split]
    out: list[_Shape] = []
    if runs:
        head = runs[0].head
        for s in runs[1:]:
            head = _union(head, s.head)
        out.append(_Shape(False, head, frozenset(), None))
    by_needs: dict[_Needs, _Shape] = {}
    for s in shapes:
        if s.split:
            o = by_needs.get(s.needs)
            by_needs[s.needs] = (
                s
                if o is None
                else _Shape(True, _union(o.head, s.head), s.needs, _union(o.tail, s.tail))
            )
    splits = list(by_needs.values())
    # A shape that needs more than another of no narrower extent adds nothing.
    splits = [
        s
        for i, s in enumerate(splits)
        if not any(
            j != i and o.needs <= s.needs and _covers(o.head, s.head) and _covers(o.tail, s.tail)
            for j, o in enumerate(splits)
            if o.needs != s.needs or j < i
        )
    ]
    if len(splits) > _SHAPE_CAP:
        # Shapes with the same partial words at their ends combine without
        # losing what later fragments join onto them; then, if need be, all.
        groups: dict[tuple[_Strs, _Strs], list[_Shape]] = {}
        for s in splits:
            groups.setdefault((s.head, s.tail), []).append(s)
        if len(groups) > _SHAPE_CAP:
            groups = {(None, None): splits}
        splits = []
        for group in groups.values():
            head, tail = group[0].head, group[0].tail
            for s in group[1:]:
                head, tail = _union(head, s.head), _union(tail, s.tail)
            splits.append(_Shape(True, head, _weaken([s.needs for s in group]), tail))
    return out + splits


def _concat_all(xs: list[_Shape], ys: list[_Shape]) -> list[_Shape]:
    return _merge([_concat(x, y) for x in xs for y in ys])


def _repeat(body: list[_Shape], lo: int, hi: int | None) -> list[_Shape]:
    if hi is not None and hi <= 3:
        out: list[_Shape] = []
        acc = [_EMPTY]
        for k in range(hi + 1):
            if k >= lo:
                out.extend(acc)
            if k < hi:
                acc = _concat_all(acc, body)
        return _merge(out)
    # Many repetitions: keep only what every one of them starts or ends with.
    if all(not s.split for s in body):
        more = [_EMPTY, _ANY_RUN]
    elif all(s.split for s in body):
        head, tail = body[0].head, body[0].tail
        for s in body[1:]:
            head, tail = _union(head, s.head), _union(tail, s.tail)
        more = [_EMPTY, _Shape(True, head, frozenset(), tail)]
    else:
        more = [_EMPTY, _ANY_RUN, _ANY_SPLIT]
    return _merge(more) if lo == 0 else _concat_all(body, _merge(more))


_ALNUM, _SEPS, _MIXED = 0, 1, 2  # what a character class can match
_BOUNDARY, _NOT_BOUNDARY = 3, 4  # what an escape can be besides
_CharSet = tuple[int, frozenset[str] | None]


def _chars_kind(chars: frozenset[str]) -> int:
    if all(c.isalnum() for c in chars):
        return _ALNUM
    if not any(c.isalnum() for c in chars):
        return _SEPS
    return _MIXED


def _char_shapes(kind: int, chars: frozenset[str] | None) -> list[_Shape]:
    if kind == _ALNUM:
        return [_Shape(False, chars, frozenset(), None)]
    if kind == _SEPS:
        if chars is not None and len(chars) == 1 and chars <= _RARE_PUNCT:
            return [_Shape(True, frozenset({""}), frozenset({chars}), frozenset({""}))]
        return [_SEPARATOR]
    return [_ANY_RUN, _SEPARATOR]


class _Shapes:
    """Shapes of a regex, by recursive descent over the syntax used here.

    Anything outside that syntax raises ValueError at import, so that a new
    construct cannot be misread into a wrong gate.
    """

    _ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}

    def __init__(self, src: str) -> None:
        self.src = src
        self.i = 0

    def parse(self) -> list[_Shape]:
        shapes = self._alt()
        if self.i != len(self.src):
            raise ValueError(f"unsupported regex syntax at {self.src[self.i :]!r}")
        return shapes

    def _peek(self, s: str) -> bool:
        return self.src.startswith(s, self.i)

    def _alt(self) -> list[_Shape]:
        shapes = self._seq()
        while self._peek("|"):
            self.i += 1
            shapes = _merge(shapes + self._seq())
        return shapes

    def _seq(self) -> list[_Shape]:
        acc = [_EMPTY]
        while self.i < len(self.src) and self.src[self.i] not in "|)":
            acc = _concat_all(acc, self._quantified(self._atom()))
        return acc

    def _atom(self) -> list[_Shape]:
        c = self.src[self.i]
        self.i += 1
        if c == "(":
            return self._group()
        if c == "[":
            return _char_shapes(*self._class())
        if c == "\\":
            kind, chars = self._escape(in_class=False)
            if kind == _BOUNDARY:
                return [_SEPARATOR]
            return [_EMPTY] if kind == _NOT_BOUNDARY else _char_shapes(kind, chars)
        if c == ".":
            return _char_shapes(_MIXED, None)
        if c in "^$":
            return [_SEPARATOR]
        if c in "*+?{})":
            raise ValueError(f"unsupported regex syntax at {self.src[self.i - 1 :]!r}")
        return _char_shapes(_chars_kind(frozenset(c)), frozenset(c))

    def _group(self) -> list[_Shape]:
        # Patterns share fragments (verbs, gaps, nouns); a group's shapes
        # depend on its text alone.
        start = self.i - 1
        end = _group_end(self.src, start)
        cached = _GROUP_SHAPES.get(self.src[start:end])
        if cached is not None:
            self.i = end
            return cached
        shapes = self._group_shapes()
        _GROUP_SHAPES[self.src[start : self.i]] = shapes
        return shapes

    def _group_shapes(self) -> list[_Shape]:
        kind = "(?:"
        for prefix in ("?:", "?=", "?!", "?<=", "?<!"):
            if self._peek(prefix):
                kind = f"({prefix}"
                self.i += len(prefix)
                break
        else:
            if self._peek("?"):
                raise ValueError(f"unsupported group at {self.src[self.i :]!r}")
        shapes = self._alt()
        if not self._peek(")"):
            raise ValueError("unbalanced parenthesis")
        self.i += 1
        if kind == "(?:":
            return shapes
        # A lookaround matches nothing itself, but a positive one over
        # punctuation ("(?<=\[)") marks a word boundary.
        if kind in ("(?=", "(?<=") and all(
            s.split and s.head == s.tail == frozenset({""}) for s in shapes
        ):
            return shapes
        return [_EMPTY]

    def _escape(self, *, in_class: bool) -> _CharSet:
        """(kind, characters) of an escape."""
        c = self.src[self.i]
        self.i += 1
        if not in_class and c in "bAZ":
            return _BOUNDARY, None
        if not in_class and c == "B":
            return _NOT_BOUNDARY, None
        if c in "Ws":
            return _SEPS, None
        if c in "wSD":
            return _MIXED, None
        if c == "d":
            return _ALNUM, None
        if c in self._ESCAPES:
            char = self._ESCAPES[c]
        elif c in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[c]
            char = chr(int(self.src[self.i : self.i + width], 16))
            self.i += width
        elif c.isalnum():
            raise ValueError(f"unsupported escape \\{c}")
        else:
            char = c
        return _chars_kind(frozenset(char)), frozenset(char)

    def _class(self) -> _CharSet:
        negated = self._peek("^")
        self.i += negated
        items: list[_CharSet] = []
        word = underscore = False
        first = True
        while not (self._peek("]") and not first):
            if self.i >= len(self.src):
                raise ValueError("unterminated character class")
            first = False
            c = self.src[self.i]
            self.i += 1
            if c == "\\":
                word |= self._peek("w")
                item = self._escape(in_class=True)
            else:
                item = (_chars_kind(frozenset(c)), frozenset(c))
            underscore |= item[1] == frozenset("_")
            if self._peek("-") and not self.src.startswith("-]", self.i) and item[1] is not None:
                self.i += 1
                hi_c = self.src[self.i]
                self.i += 1
                if hi_c == "\\":
                    hi_item = self._escape(in_class=True)
                    if hi_item[1] is None:
                        raise ValueError("unsupported class range")
                    (hi_c,) = hi_item[1]
                (lo_c,) = item[1]
                span = frozenset(map(chr, range(ord(lo_c), ord(hi_c) + 1)))
                item = (_chars_kind(span), span)
            items.append(item)
        self.i += 1
        kinds = {k for k, _ in items}
        if not negated:
            if len(kinds) > 1:
                return _MIXED, None
            chars = (
                None
                if any(s is None for _, s in items)
                else frozenset().union(*(s for _, s in items if s is not None))
            )
            return kinds.pop(), chars
        if word:
            return _SEPS, None  # outside \w: no letter or digit
        if underscore and kinds == {_SEPS} and any(s is None for _, s in items):
            return _ALNUM, None  # [^\W_]
        return _MIXED, None

    def _quantified(self, shapes: list[_Shape]) -> list[_Shape]:
        c = self.src[self.i] if self.i < len(self.src) else ""
        if c == "?":
            lo, hi = 0, 1
        elif c == "*":
            lo, hi = 0, None
        elif c == "+":
            lo, hi = 1, None
        elif c == "{":
            end = self.src.index("}", self.i)
            lo_s, comma, hi_s = self.src[self.i + 1 : end].partition(",")
            lo = int(lo_s or 0)
            hi = (int(hi_s) if hi_s else None) if comma else lo
            self.i = end
        else:
            return shapes
        self.i += 1
        if self._peek("?") or self._peek("+"):
            self.i += 1
        return _repeat(shapes, lo, hi)


_GROUP_SHAPES: dict[str, list[_Shape]] = {}


def _syntax(pattern: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, depth after it) for each `(`, `)` and `|` from `start`.

    Escaped characters and character classes are skipped: their parentheses
    and bars are literal.
    """
    depth = 0
    i = start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 1
        elif c == "[":
            i = _class_end(pattern, i)
            continue
        elif c in "()|":
            depth += (c == "(") - (c == ")")
            yield i, c, depth
        i += 1


def _group_end(pattern: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at `start`."""
    for i, c, depth in _syntax(pattern, start):
        if c == ")" and depth == 0:
            return i + 1
    raise ValueError("unbalanced parenthesis")


def _class_end(pattern: str, i: int) -> int:
    """The index just past the character class that opens at `i`."""
    i += 1
    i += pattern.startswith("^", i)
    i += pattern.startswith("]", i)
    while pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def _top_level(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern."""
    parts: list[str] = []
    start = 0
    for i, c, depth in _syntax(pattern):
        if c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    parts.append(pattern[start:])
    return parts


def _needs(pattern: str) -> tuple[_Needs, ...]:
    """For each way to match `pattern`: the words (and substrings) it needs.

    An empty entry means the pattern can match without anything known.
    """
    dnf: list[_Needs] = []
    for s in _Shapes(pattern).parse():
        needs = set(s.needs)
        # A match may begin or end inside a word, but it still contains
        # the partial word as a substring. Each spelling costs a pass over
        # the text when absent, so only a few are worth checking.
        for part in (s.head, s.tail) if s.split else (s.head,):
            if part is not None and "" not in part and len(part) <= _MAX_SUBSTRINGS:
                needs.add(frozenset(_SUBSTRING + w for w in part))
        dnf.append(frozenset(needs))
    # Ways that need a superset of another's words add nothing.
    return tuple(
        n
        for i, n in enumerate(dnf)
        if not any(o <= n and (o != n or j < i) for j, o in enumerate(dnf) if j != i)
    )


# --------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------

# A need, ready to check: its words, and substrings (punctuation, partial
# words); one of either must occur.
_Check = tuple[frozenset[str], tuple[str, ...]]


def _check(need: frozenset[str]) -> _Check:
    words = frozenset(w for w in need if w.isalnum())
    return words, tuple(sorted(w.lstrip(_SUBSTRING) for w in need - words))


@dataclass(frozen=True, slots=True)
class _Ways:
    """Every way to match a set of patterns, looked up by its rarest need.

    Each top-level alternative of each pattern is one or more ways (sets of
    needs). A way is indexed under the words of its rarest all-word need;
    the words found in a text thus pick the few ways worth checking, and a
    pattern is tried only with alternatives that have a way whose needs all
    occur.
    """

    owners: tuple[tuple[int, int], ...]  # alternative -> (pattern, alternative in it)
    index: dict[str, tuple[int, ...]]  # word -> ways keyed by it
    ways: tuple[tuple[int, tuple[int, ...]], ...]  # (alternative, ids of its other needs)
    checks: tuple[_Check, ...]
    keys: frozenset[str]

    @classmethod
    def of(cls, patterns: list[list[str]]) -> _Ways:
        owners = tuple((i, j) for i, alts in enumerate(patterns) for j in range(len(alts)))
        index: dict[str, list[int]] = {}
        ways: list[tuple[int, tuple[int, ...]]] = []
        checks: dict[_Check, int] = {}
        for alt, (i, j) in enumerate(owners):
            for needs in _needs(patterns[i][j]):
                key = min(needs, key=_rarity, default=None)
                if key is None or _rarity(key)[0] == math.inf:
                    raise ValueError(f"no word is needed to match {patterns[i][j]!r}")
                rest = sorted(needs - {key}, key=_rarity)
                for word in key:
                    index.setdefault(word, []).append(len(ways))
                ways.append((alt, tuple(checks.setdefault(_check(n), len(checks)) for n in rest)))
        return cls(
            owners,
            {w: tuple(ids) for w, ids in index.items()},
            tuple(ways),
            tuple(checks),
            frozenset(index),
        )

    def live(
        self, present: AbstractSet[str], words: AbstractSet[str], low: str
    ) -> dict[int, list[int]]:
        """pattern -> its alternatives that can match (in order), given the
        text's words and the subset `present` of them that are keys."""
        ways, checks, index = self.ways, self.checks, self.index
        candidates: set[int] = set()
        for word in present:
            candidates.update(index[word])
        live: set[int] = set()
        seen: dict[int, bool] = {}
        for way in candidates:
            alt, rest = ways[way]
            if alt in live:
                continue
            for check in rest:
                ok = seen.get(check)
                if ok is None:
                    need_words, substrings = checks[check]
                    ok = seen[check] = not need_words.isdisjoint(words) or (
                        bool(substrings) and any(map(low.__contains__, substrings))
                    )
                if not ok:
                    break
            else:
                live.add(alt)
        by_pattern: dict[int, list[int]] = {}
        for alt in sorted(live):
            i, j = self.owners[alt]
            by_pattern.setdefault(i, []).append(j)
        return by_pattern


@dataclass(frozen=True, slots=True)
class _Rule:
    group: str  # the first hit of a group wins (strong variants come first)
    signal: str
    level: int
    label: str
    alts: tuple[re.Pattern[str], ...]  # the pattern's top-level alternatives
    starts: frozenset[str]  # a match is tried only where one of these begins a word
    gate: frozenset[str]  # one of these words must occur somewhere


_PHRASE_RULES: Final = tuple(
    _Rule(
        group,
        signal,
        level,
        label,
        tuple(re.compile(alt) for alt in _top_level(pattern)),
        _words(starts),
        _words(gate) or _words(starts),
    )
    for group, signal, level, label, starts, gate, pattern in _PHRASES
)
_PHRASE_WAYS: Final = _Ways.of([[a.pattern for a in r.alts] for r in _PHRASE_RULES])
# Every phrase's gate words, for the leetspeak check.
_TRIGGERS: Final = frozenset().union(*(r.gate for r in _PHRASE_RULES))


def _leet_spellings(words: frozenset[str]) -> frozenset[str]:
    """The words that `_LEET` maps onto one of `words` and that mix letters
    and digits: a set lookup then replaces translating every such word."""
    if not all(w.isascii() and w.isalpha() for w in words):
        raise ValueError("leetspeak triggers must be ASCII letters")
    digit_for = {str(letter): chr(digit) for digit, letter in _LEET.items()}
    out: set[str] = set()
    for word in words:
        options = [(c, digit_for[c]) if c in digit_for else (c,) for c in word]
        out.update(
            spelling
            for spelling in map("".join, product(*options))
            if not spelling.isalpha() and not spelling.isdigit()
        )
    return frozenset(out)


_LEET_SPELLINGS: Final = _leet_spellings(_TRIGGERS)


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

# The words without one of which no rule can match; most texts have none.
_KEYS: Final = _PHRASE_WAYS.keys | _TEMPLATE_WAYS.keys | _ROT13_HINTS | _LEET_SPELLINGS


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


def _match_at_starts(alts: list[re.Pattern[str]], s: str, keys: list[str]) -> re.Match[str] | None:
    """The leftmost match of the alternatives (tried in order at each
    position), looked for only where one of `keys` begins a word.

    Leftmost, not first found per key: `keys` comes from a set, whose order
    changes with the hash seed, and the quote in a verdict must not.
    """
    positions: set[int] = set()
    for key in keys:
        i = s.find(key)
        while i != -1:
            if i == 0 or not s[i - 1].isalnum():
                positions.add(i)
            i = s.find(key, i + 1)
    for i in sorted(positions):
        for alt in alts:
            m = alt.match(s, i)
            if m:
                return m
    return None


def _apply_phrases(
    low: str, words: AbstractSet[str], present: AbstractSet[str] | None = None
) -> list[_Hit]:
    keys = _PHRASE_WAYS.keys.intersection(words if present is None else present)
    if not keys:
        return []
    hits: list[_Hit] = []
    done: set[str] = set()
    s = ""
    for i, alts in _PHRASE_WAYS.live(keys, words, low).items():
        rule = _PHRASE_RULES[i]
        if rule.group in done or rule.gate.isdisjoint(words):
            continue
        starts = [w for w in rule.starts if w in words]
        if not starts:
            continue
        # Whitespace is collapsed only for text that reaches a pattern.
        s = s or " ".join(low.split())
        m = _match_at_starts([rule.alts[j] for j in alts], s, starts)
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


def _phrase_hits(
    low: str, words: AbstractSet[str], present: AbstractSet[str] | None = None
) -> list[_Hit]:
    hits = _apply_phrases(low, words, present)
    if hits:
        return hits
    # Leetspeak matters only where a word is a leet spelling of a trigger.
    if _LEET_SPELLINGS.isdisjoint(words if present is None else present):
        return hits
    leet = low.translate(_LEET)
    return _apply_phrases(leet, set(_tokens(leet)))


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
    if not hits and "]" in text and "INST]" in text:
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


def _image(keep: str) -> bytes:
    """A translation table: bytes in `keep` become "a", all others a space."""
    return bytes(0x61 if chr(b) in keep else 0x20 for b in range(256))


_ALNUM_CHARS: Final = "".join(chr(b) for b in range(128) if chr(b).isalnum())
_ALNUM_IMAGE: Final = _image(_ALNUM_CHARS)
_B64_IMAGE: Final = _image(_ALNUM_CHARS + "+/_-")
_B64_GLUE: Final = frozenset(b"+/_-")  # base64 characters that split words
_HEX_IMAGE: Final = _image("0123456789abcdefABCDEF")
_LOWER_HEX: Final = b"0123456789abcdef"
_LONG_RUN: Final = b"a" * _LONG_TOKEN
_B64_MIN: Final = 24
_HEX_RUN: Final = b"a" * 32


def _blobs(raw: bytes) -> Iterator[tuple[str, bool]]:
    """Base64 (True) or hex (False) runs that hold a word of 16+ letters and
    digits mixed, in text order, each once (for up to _MAX_BLOBS words).

    `raw` is the UTF-8 of the original text (base64 is case-sensitive).
    Encoded text mixes letters and digits; identifiers and numbers do not. A
    base64 run is taken whole, from separator to separator, so that it
    decodes from its start; base64 wrapped into lines yields every line.
    """
    alnum = raw.translate(_ALNUM_IMAGE)
    b64 = b""
    seen: set[bytes] = set()
    decoded_from: set[int] = set()
    at = alnum.find(_LONG_RUN)
    while at != -1:
        end = alnum.find(b" ", at)
        end = len(raw) if end == -1 else end
        token = raw[at:end]
        if token in seen or token.isalpha() or token.isdigit():
            at = alnum.find(_LONG_RUN, end)
            continue
        seen.add(token)
        glued = (at and raw[at - 1] in _B64_GLUE) or (end < len(raw) and raw[end] in _B64_GLUE)
        if not glued and not token.translate(None, _LOWER_HEX):
            # A lowercase hex word on its own (hash, id): it never decodes
            # from base64 to anything with a space, which text has (see
            # _as_text); as hex, a space is "20".
            if len(token) >= len(_HEX_RUN) and b"20" in token:
                yield token.decode("ascii"), False
        else:
            # The whole base64 run, so that decoding starts where it does.
            lo, hi = at, end
            if glued:
                b64 = b64 or raw.translate(_B64_IMAGE)
                lo = b64.rfind(b" ", 0, at) + 1
                hi = b64.find(b" ", end)
                hi = len(raw) if hi == -1 else hi
            if hi - lo >= _B64_MIN and lo not in decoded_from:
                decoded_from.add(lo)
                yield raw[lo:hi].decode("ascii"), True
            # A hex run cannot reach past the word's ends (they are not hex).
            image = token.translate(_HEX_IMAGE)
            h = image.find(_HEX_RUN)
            if h != -1:
                h_end = image.find(b" ", h)
                run = token[h : len(token) if h_end == -1 else h_end]
                if b"20" in run:
                    yield run.decode("ascii"), False
        if len(seen) >= _MAX_BLOBS:
            return
        at = alnum.find(_LONG_RUN, end)


def _runs(text: str, opener: str, pattern: re.Pattern[str]) -> Iterator[str]:
    """`pattern.finditer` for a pattern that starts with `opener`, cheaply."""
    i = text.find(opener)
    while i != -1:
        m = pattern.match(text, i)
        if m:
            yield m.group()
            i = text.find(opener, m.end())
        else:
            i = text.find(opener, i + 1)


def _pct_runs(text: str) -> Iterator[str]:
    """URL-encoded runs: only where six escapes sit close enough together."""
    escapes = [m.start() for m in _PCT_ESCAPE.finditer(text)]
    pos = cluster = 0
    for k in range(1, len(escapes) + 1):
        if k < len(escapes) and escapes[k] - escapes[k - 1] <= 3 + _PCT_GAP:
            continue
        first, last, count = escapes[cluster], escapes[k - 1], k - cluster
        cluster = k
        if count >= 6 and last >= pos:
            while m := _PCT_RUN.search(text, max(pos, first - _PCT_GAP), last + 3):
                # The search stopped at the cluster's end; the run may go on.
                run = (_PCT_RUN.match(text, m.start()) or m).group()
                pos = m.start() + len(run)
                yield run
                if pos > last:
                    break


def _decoded_candidates(text: str, low: str, present: AbstractSet[str]) -> Iterator[str]:
    """Text hidden in base64, hex, percent/entity escapes or rot13.

    `present`: the text's words among `_KEYS`.
    """
    budget = _MAX_BLOBS
    # _blobs's first step, a translate and a find of 16 alphanumerics in a
    # row, is itself the cheapest test for a long word.
    for blob, is_b64 in _blobs(text.encode("utf-8", "surrogatepass")):
        decoded = _b64_text(blob) if is_b64 else _hex_text(blob)
        if decoded:
            yield decoded
        budget -= 1
        if budget <= 0:
            return
    # One-character memchr checks first: a two-character search or a count
    # costs a full pass even when the opener is absent.
    escapes: list[tuple[Iterator[str], Callable[[str], str | None]]] = []
    if "\\" in text and "\\x" in text:
        escapes.append((_runs(text, "\\x", _HEX_ESCAPES), _escape_text))
    if "%" in text and text.count("%") >= 6:
        escapes.append((_pct_runs(text), _pct_text))
    if "&" in text and text.count("&#") >= 8:
        escapes.append((_runs(text, "&#", _ENTITY_RUN), _entity_text))
    for runs, decode in escapes:
        for run in runs:
            decoded = decode(run)
            if decoded:
                yield decoded
            budget -= 1
            if budget <= 0:
                return
    if not _ROT13_HINTS.isdisjoint(present):
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
        return self._probability(total, len(words))

    def _probability(self, total: float, distinct: int) -> float:
        z = self.bias + total / math.sqrt(distinct)
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
    """Rule hits, the words of the text and its distinct words."""
    invisible = False
    if text.isascii():
        low = text.lower()
        toks = low.encode("ascii").translate(_ASCII_SEP).decode("ascii").split()
    elif (plain := _plain_punctuation(text)).isascii():
        # Typographic quotes and dashes in English: NFKC and casefolding
        # would leave these characters as they are, and then map them to
        # ASCII, so this is the same text at the cost of a few replaces.
        low = plain.lower()
        toks = low.encode("ascii").translate(_ASCII_SEP).decode("ascii").split()
    else:
        invisible = _has_invisible(plain)
        low, low_raw = _fold(plain, invisible, plain=True)
        toks = _split_words(low, low_raw)
    words = set(toks)
    # The rules test small word sets against `words`, so only the key words
    # need a pass over it; each lookup in a big set is a likely cache miss.
    present = _KEYS.intersection(words)
    hits: list[_Hit] = []
    hidden: list[str] = []
    if invisible:
        hits, hidden = _invisible_hits(text)
    # Without a key word no phrase, template, leetspeak or rot13 rule can
    # match; only Llama's case-sensitive markers are left to look for.
    if present or "]" in text:
        hits.extend(_template_hits(text, low, words, present))
    if present:
        hits.extend(_phrase_hits(low, words, present))
    if hidden and any(map(_hidden_instruction, hidden)):
        hits.append(_Hit("encoded_instruction", _DENY, "hidden instruction", ""))
    elif not hits or all(h.level != _DENY for h in hits):
        # Encoded runs are long words that mix in digits; escapes need their
        # opener (a memchr each); rot13 needs one of its hint words.
        for decoded in _decoded_candidates(text, low, present):
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
    level = max(h.level for h in hits) if hits else 0
    # Fewer distinct words than the model reads (in any window) score 0.
    if _MODEL is not None and level < _DENY and len(words) >= _MODEL_MIN_WORDS:
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
