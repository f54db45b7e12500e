"""The entry points: every rule family over one normalised view of the text,
then the model.

The text is normalised once per call (escapes of JSON and YAML strings
undone, casefolded, split into words); the word set is intersected once with
the key words of all rule families, and each family reads that one view.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Final

from gateway.guard.detectors.injection.decoders import (
    _REVERSED_HINTS,
    _ROT13_HINTS,
    _decoded_candidates,
    _hidden_instruction,
)
from gateway.guard.detectors.injection.hidden import _invisible_hits
from gateway.guard.detectors.injection.literals import LITERAL_WORDS, literal_hits
from gateway.guard.detectors.injection.model import _MODEL, _MODEL_MIN_WORDS
from gateway.guard.detectors.injection.phrases import (
    _LEET_SPELLINGS,
    _PHRASE_WAYS,
    PHRASE_WORDS,
    _phrase_hits,
)
from gateway.guard.detectors.injection.templates import (
    _INST,
    _TEMPLATE_WAYS,
    TEMPLATE_WORDS,
    _template_hits,
)
from gateway.guard.detectors.injection.text import (
    Vocabulary,
    _fold,
    _has_invisible,
    _normalise,
    _plain_punctuation,
    _split_words,
    _unescape,
    ascii_lower,
    feature_sum,
)
from gateway.guard.detectors.injection.verdict import (
    _ALLOW,
    CATEGORY,
    CUE,
    DENY,
    REVIEW,
    Hit,
    InjectionAssessment,
    quote,
)

# The words without one of which no word rule can match; most texts have none.
_KEYS: Final = (
    _PHRASE_WAYS.keys | _TEMPLATE_WAYS.keys | _ROT13_HINTS | _REVERSED_HINTS | _LEET_SPELLINGS
)
# Every word a rule may look for in a text's word set: the rules read only
# these, so a text is reduced to the ones it holds (in C, without a str per
# word, when the extension is built). The same pass sums the model's weights.
_VOCABULARY_WORDS: Final = _KEYS | PHRASE_WORDS | TEMPLATE_WORDS | LITERAL_WORDS
_VOCABULARY: Final = Vocabulary(
    _VOCABULARY_WORDS,
    _MODEL.units if _MODEL is not None else None,
    _MODEL.aliases if _MODEL is not None else None,
)
_PHRASE_WAYS.bind(_VOCABULARY)
_TEMPLATE_WAYS.bind(_VOCABULARY)
# Of a text: its numbers of distinct words, of words and of distinct model
# features, and the sum of the features' weights (see `model`).
_Counts = tuple[int, int, int, int]


def _features(words: AbstractSet[str]) -> tuple[int, int]:
    if _MODEL is None:
        return len(words), 0
    return feature_sum(words, _MODEL.units, _MODEL.aliases)


# UTF-8 lead bytes of the blocks that hold kana, CJK ideographs and Hangul
# (U+3000..U+DFFF): the literal rules for those languages run only if one occurs.
_CJK_LEADS: Final = tuple(bytes([b]) for b in range(0xE3, 0xEE))


def _rules(text: str) -> tuple[list[Hit], str, AbstractSet[str], _Counts]:
    """Rule hits; the casefolded text, a set holding its words among
    `_VOCABULARY_WORDS`, and what the model reads of it (`_Counts`)."""
    if "\\" in text:
        # Tool results arrive as JSON or YAML strings: "\n" and "\"" would
        # otherwise glue words together and hide phrases across lines.
        text = _unescape(text)
    invisible = False
    cjk = False
    if text.isascii():
        low = ascii_lower(text)
        words, distinct, count, features, total = _VOCABULARY.scan(low)
    elif (plain := _plain_punctuation(text)).isascii():
        # Typographic quotes and dashes in English: NFKC and casefolding
        # would leave these characters as they are, and then map them to
        # ASCII, so this is the same text at the cost of a few replaces.
        low = ascii_lower(plain)
        words, distinct, count, features, total = _VOCABULARY.scan(low)
    else:
        invisible = _has_invisible(plain)
        low, low_raw = _fold(plain, invisible, plain=True)
        toks = _split_words(low, low_raw)
        words = set(toks)
        distinct, count = len(words), len(toks)
        features, total = _features(words)
        cjk = any(map(low_raw.__contains__, _CJK_LEADS))
    # The rules test small word sets against `words`, so only the key words
    # need a pass over it; each lookup in a big set is a likely cache miss.
    present = _KEYS.intersection(words)
    hits: list[Hit] = []
    hidden: list[str] = []
    if invisible:
        hits, hidden = _invisible_hits(text)
    # Without a key word no phrase, template, leetspeak or rot13 rule can
    # match; only Llama's case-sensitive markers are left to look for.
    if present or _INST in words:
        hits.extend(_template_hits(text, low, words, present))
    if present:
        hits.extend(_phrase_hits(low, words, present))
    hits.extend(literal_hits(low, words, cjk))
    if hidden and any(map(_hidden_instruction, hidden)):
        hits.append(Hit("encoded_instruction", DENY, "hidden instruction", ""))
    elif not hits or all(h.level != DENY for h in hits):
        # Encoded runs are long words that mix in digits; escapes need their
        # opener (a memchr each); rot13 needs one of its hint words.
        for decoded in _decoded_candidates(text, low, present):
            if _hidden_instruction(decoded):
                hits.append(Hit("encoded_instruction", DENY, "encoded instruction", ""))
                break
    return hits, low, words, (distinct, count, features, total)


def rule_hits(text: str) -> list[tuple[str, str]]:
    """(signal, level) of every rule that fires; for tests and benchmarks."""
    names = {DENY: "deny", REVIEW: "review", CUE: "cue"}
    return [(h.signal, names[h.level]) for h in _rules(text)[0]]


def model_score(text: str) -> float:
    """The statistical score alone, for benchmarks and threshold tuning."""
    if _MODEL is None:
        return 0.0
    return _MODEL.score(_normalise(text))


def assess(text: str) -> InjectionAssessment:
    """Classify one untrusted text segment."""
    if not text or text.isspace():
        return _ALLOW
    hits, low, _, counts = _rules(text)
    level = max((h.level for h in hits), default=CUE)
    # Fewer distinct words than the model reads (in any window) score 0.
    if _MODEL is not None and level < DENY and counts[0] >= _MODEL_MIN_WORDS:
        p = _MODEL.score(low, counts)
        if p >= _MODEL.deny_at:
            hits.append(Hit("model_score", DENY, f"classifier score {p:.2f}", ""))
        elif p >= _MODEL.review_at:
            hits.append(Hit("model_score", REVIEW, f"classifier score {p:.2f}", ""))
    if not hits:
        return _ALLOW
    signals = tuple(dict.fromkeys(h.signal for h in hits))
    level = max(h.level for h in hits)
    # Two independent signals make an explicit attack more likely than a
    # coincidence: two reviews (or a review and a cue) add up to a deny, and
    # two cues to a review. A cue alone is what ordinary requests look like.
    if len(signals) >= 2 and level < DENY:
        level += 1
    if level == CUE:
        return _ALLOW
    top = max(hits, key=lambda h: h.level)
    reason = top.label + (f": '{quote(top.quote)}'" if top.quote else "")
    if len(signals) > 1:
        reason += f" (+{len(signals) - 1} more signal{'s' if len(signals) > 2 else ''})"
    return InjectionAssessment("deny" if level == DENY else "review", CATEGORY, reason, signals)
