"""Every phrase rule is findable by name, and its declared start and gate
words never hide one of its matches.

A rule is tried only where one of its start words begins a word, and only if
one of its gate words occurs. Both are written by hand next to the pattern;
random strings drawn from each alternative (by the stdlib regex parser, as in
tests/guard/test_injection.py) check them.
"""

from __future__ import annotations

import random
import re

from gateway.guard.detectors.injection import phrases, rules
from gateway.guard.detectors.injection import text as norm
from gateway.guard.detectors.injection.literals import _RULES as LITERAL_RULES
from tests.guard.test_injection import _samples


def test_rule_names_are_unique_and_say_their_family() -> None:
    names = [r.name for r in phrases._PHRASE_RULES] + [r.name for r in LITERAL_RULES]
    assert len(names) == len(set(names))
    for name in names:
        family = name.split(".")[0]
        assert re.fullmatch(r"[a-z_]+(?:\.[a-z_]+)+", name), name
        assert family in {
            "override",
            "new_instructions",
            "persona",
            "extraction",
            "secret",
            "exfiltration",
            "concealment",
            "action",
            "authority",
            "planted",
            "multilingual",
            "obfuscation",
            "marker",
            "exfil",
        }, name
    assert len(rules.NAMES) == len(rules.PHRASES)


# The older families' gate words skip spellings with the separators left
# out ("jailbreakmode", "privatekey", "promptare:"), which their patterns
# tolerate; those gates are known to be narrower, so only their start words
# are checked here.
_GLUED_TOLERATED = (
    "override.",
    "new_instructions.",
    "persona.",
    "secret.",
    "exfiltration.",
    "concealment.",
    "extraction.reveal_your_prompt",
    "extraction.what_are_your_instructions",
    "extraction.system_prompt",
)


def test_start_and_gate_words_never_hide_a_match() -> None:
    rnd = random.Random(99)
    checked = 0
    for rule in phrases._PHRASE_RULES:
        for alt in rule.alts:
            for sample in _samples(alt.pattern, rnd, 40):
                low = norm._casefolded(sample)
                s = " ".join(low.split())
                m = alt.search(s)
                if m is None:
                    continue
                words = set(norm._tokens(low))
                if not rule.name.startswith(_GLUED_TOLERATED):
                    assert not rule.gate.isdisjoint(words), (rule.name, sample)
                first = norm._tokens(s[m.start() :])[:1]
                tolerated = rule.name.startswith(_GLUED_TOLERATED)
                assert first, (rule.name, sample)
                assert first[0] in rule.starts or (
                    tolerated and any(first[0].startswith(w) for w in rule.starts)
                ), (rule.name, sample, first)
                checked += 1
    assert checked > 1000


_CONTEXTS = ("", "print(", "visit ", "and ", "the ", "when ", "as ")


def test_every_rule_fires_through_assess_on_a_sample() -> None:
    # Not a decision test: a rule whose index entry or start word is wrong
    # would never produce a hit, whatever its pattern says.
    rnd = random.Random(7)
    silent = []
    for i, rule in enumerate(phrases._PHRASE_RULES):
        fired = False
        for alt in rule.alts:
            # Look-behinds are not drawn by the sampler: these supply the
            # words the rules look behind for.
            drawn = _samples(alt.pattern, rnd, 30)
            for sample in [p + d for d in drawn for p in _CONTEXTS]:
                low = norm._casefolded(sample)
                words = set(norm._tokens(low))
                if not alt.search(" ".join(low.split())):
                    continue
                live = phrases._PHRASE_WAYS.live(phrases._PHRASE_WAYS.keys & words, words, low)
                if i in live:
                    fired = True
                    break
            if fired:
                break
        if not fired:
            silent.append(rule.name)
    assert not silent
