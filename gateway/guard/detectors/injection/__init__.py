"""Embedded, deterministic prompt-injection detector for untrusted inbound text.

Used when no LLM classifier is configured. Two layers, both pure Python:

* rules, each named "<family>.<what it catches>" (grep the name):
  ``rules/`` holds the phrase rules by family (overrides, jailbreak
  personas, prompt and secret extraction, exfiltration and concealment,
  claimed authority, instructions planted in tool output, the same attacks
  in six more languages, decode-and-follow requests); ``literals`` the rules
  found by a substring (planted tags, data in image URLs, Chinese, Japanese,
  Korean); ``templates`` chat-template tokens and fake role headers;
  ``hidden`` invisible Unicode; ``decoders`` instructions in base64, base32,
  hex, escapes, rot13, morse, leetspeak or reversed text;
* a small logistic-regression model over binary word features (``model``,
  weights in ``injection_model.json``, trained by ``bench/train_injection.py``)
  that catches the long role-play jailbreaks no phrase list covers without
  false positives.

A rule deny is final; the model can only raise the decision. The default is
allow: an imperative aimed at the reader ("run the tests and report") is
collaboration, not steering. Some rules are cues (actions a planted note
asks for, which users ask for too): a cue counts only next to another
signal, and two different ones make a review.

Cost: the gateway runs this on every new tool result, so clean text must
cost little more than reading its words. The text is normalised once per
call (JSON/YAML string escapes undone, casefolded) and split into words
(``text``), and every family reads that one view: one set intersection with
the rules' key words finds the few that can start a rule, and the words
every match of a rule needs, read off the regexes (``gates``), decide which
rules are tried at all. All regexes use bounded repetition over disjoint character classes,
so the work stays linear in the input size.

The names below beyond the public API are re-exported for the tests that
inspect the rules (linearity, gates).
"""

from __future__ import annotations

from gateway.guard.detectors.injection.assess import _KEYS as _KEYS
from gateway.guard.detectors.injection.assess import assess, model_score, rule_hits
from gateway.guard.detectors.injection.decoders import (
    _ENTITY_RUN as _ENTITY_RUN,
)
from gateway.guard.detectors.injection.decoders import (
    _HEX_ESCAPES as _HEX_ESCAPES,
)
from gateway.guard.detectors.injection.decoders import (
    _MORSE_RUN as _MORSE_RUN,
)
from gateway.guard.detectors.injection.decoders import (
    _PCT_ESCAPE as _PCT_ESCAPE,
)
from gateway.guard.detectors.injection.decoders import (
    _PCT_RUN as _PCT_RUN,
)
from gateway.guard.detectors.injection.decoders import (
    _ROT13_HINTS as _ROT13_HINTS,
)
from gateway.guard.detectors.injection.hidden import (
    _BIDI_ANY as _BIDI_ANY,
)
from gateway.guard.detectors.injection.hidden import (
    _BIDI_OVERRIDE as _BIDI_OVERRIDE,
)
from gateway.guard.detectors.injection.hidden import (
    _BLACK_FLAG as _BLACK_FLAG,
)
from gateway.guard.detectors.injection.hidden import (
    _RTL_LETTER as _RTL_LETTER,
)
from gateway.guard.detectors.injection.hidden import (
    _TAG_RUN as _TAG_RUN,
)
from gateway.guard.detectors.injection.hidden import (
    _ZW_RUN as _ZW_RUN,
)
from gateway.guard.detectors.injection.hidden import (
    _ZW_SPLIT as _ZW_SPLIT,
)
from gateway.guard.detectors.injection.literals import _RULES as _LITERAL_RULES
from gateway.guard.detectors.injection.phrases import (
    _LEET_SPELLINGS as _LEET_SPELLINGS,
)
from gateway.guard.detectors.injection.phrases import (
    _PHRASE_RULES as _PHRASE_RULES,
)
from gateway.guard.detectors.injection.phrases import (
    _PHRASE_WAYS as _PHRASE_WAYS,
)
from gateway.guard.detectors.injection.phrases import (
    _TRIGGERS as _TRIGGERS,
)
from gateway.guard.detectors.injection.rules.vocab import _HOWTO as _HOWTO
from gateway.guard.detectors.injection.templates import (
    _ROLE_HEADER as _ROLE_HEADER,
)
from gateway.guard.detectors.injection.templates import (
    _TEMPLATE_CHARS as _TEMPLATE_CHARS,
)
from gateway.guard.detectors.injection.templates import (
    _TEMPLATE_OTHER as _TEMPLATE_OTHER,
)
from gateway.guard.detectors.injection.templates import (
    _TEMPLATE_RULES as _TEMPLATE_RULES,
)
from gateway.guard.detectors.injection.templates import (
    _TEMPLATE_SOURCE as _TEMPLATE_SOURCE,
)
from gateway.guard.detectors.injection.templates import (
    _TEMPLATE_SYSTEM as _TEMPLATE_SYSTEM,
)
from gateway.guard.detectors.injection.templates import (
    _TEMPLATE_WAYS as _TEMPLATE_WAYS,
)
from gateway.guard.detectors.injection.text import (
    _BIDI as _BIDI,
)
from gateway.guard.detectors.injection.text import (
    _LEET as _LEET,
)
from gateway.guard.detectors.injection.text import (
    _LOOKALIKES as _LOOKALIKES,
)
from gateway.guard.detectors.injection.text import (
    _MIXED_SCRIPT as _MIXED_SCRIPT,
)
from gateway.guard.detectors.injection.text import (
    _WORD as _WORD,
)
from gateway.guard.detectors.injection.text import (
    _ZERO_WIDTH as _ZERO_WIDTH,
)
from gateway.guard.detectors.injection.text import (
    _casefolded as _casefolded,
)
from gateway.guard.detectors.injection.text import (
    _fold as _fold,
)
from gateway.guard.detectors.injection.text import (
    _may_be_astral as _may_be_astral,
)
from gateway.guard.detectors.injection.text import (
    _plain_punctuation as _plain_punctuation,
)
from gateway.guard.detectors.injection.text import (
    _tokens as _tokens,
)
from gateway.guard.detectors.injection.verdict import CATEGORY, Decision, InjectionAssessment

__all__ = [
    "CATEGORY",
    "Decision",
    "InjectionAssessment",
    "assess",
    "model_score",
    "rule_hits",
]

# Every compiled regex of the package, so that the linearity tests that read
# this module's globals see them all.
_PATTERNS = (
    _BIDI_ANY,
    _BIDI_OVERRIDE,
    _ENTITY_RUN,
    _HEX_ESCAPES,
    _HOWTO,
    _MIXED_SCRIPT,
    _MORSE_RUN,
    _PCT_ESCAPE,
    _PCT_RUN,
    _ROLE_HEADER,
    _RTL_LETTER,
    _TAG_RUN,
    _TEMPLATE_OTHER,
    _TEMPLATE_SYSTEM,
    _WORD,
    _ZW_RUN,
    _ZW_SPLIT,
    *(r.pattern for r in _LITERAL_RULES),
)
