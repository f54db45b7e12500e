"""The entry points: every rule family over one normalised view of the text,
then the model."""

from __future__ import annotations

from typing import Final

from gateway.guard.detectors.injection.decoders import (
    _ROT13_HINTS,
    _decoded_candidates,
    _hidden_instruction,
)
from gateway.guard.detectors.injection.hidden import _invisible_hits
from gateway.guard.detectors.injection.model import _MODEL, _MODEL_MIN_WORDS
from gateway.guard.detectors.injection.phrases import _LEET_SPELLINGS, _PHRASE_WAYS, _phrase_hits
from gateway.guard.detectors.injection.templates import _TEMPLATE_WAYS, _template_hits
from gateway.guard.detectors.injection.text import (
    _ASCII_SEP,
    _fold,
    _has_invisible,
    _normalise,
    _plain_punctuation,
    _split_words,
    _tokens,
)
from gateway.guard.detectors.injection.verdict import (
    _ALLOW,
    CATEGORY,
    DENY,
    REVIEW,
    Hit,
    InjectionAssessment,
    quote,
)

_DENY: Final = DENY
_REVIEW: Final = REVIEW
_Hit = Hit
_quote = quote

# The words without one of which no rule can match; most texts have none.
_KEYS: Final = _PHRASE_WAYS.keys | _TEMPLATE_WAYS.keys | _ROT13_HINTS | _LEET_SPELLINGS


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
