"""Overrides of the reader's instructions, and new instructions announced as such."""

from __future__ import annotations

from typing import Final

from gateway.guard.detectors.injection.rules.base import Phrase
from gateway.guard.detectors.injection.rules.vocab import (
    _GAP3,
    _GAP5,
    _NOT_NEGATED,
    _OBJ_STRONG,
    _OBJ_STRONG_WORDS,
    _OBJ_WEAK,
    _OBJ_WEAK_WORDS,
    _OVERRIDE_QUAL,
    _OVERRIDE_QUAL_POINTED,
    _OVERRIDE_STARTS,
    _OVERRIDE_VERB,
    _OVERRIDE_VERB_POINTED,
)
from gateway.guard.detectors.injection.verdict import DENY as _DENY
from gateway.guard.detectors.injection.verdict import REVIEW as _REVIEW

RULES: Final[tuple[Phrase, ...]] = (
    # Explicit overrides of the reader's instructions.
    Phrase(
        "override.ignore_previous_instructions",
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
    Phrase(
        "override.bypass_your_instructions",
        "override",
        "override_instructions",
        _DENY,
        "instruction override",
        "override overriding bypass bypassing skip dismiss circumvent",
        _OBJ_STRONG_WORDS,
        rf"{_NOT_NEGATED}\b{_OVERRIDE_VERB_POINTED}\b{_GAP3}{_OVERRIDE_QUAL_POINTED}\b{_GAP3}"
        rf"{_OBJ_STRONG}\b",
    ),
    Phrase(
        "override.ignore_the_above",
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
    Phrase(
        "override.ignore_previous_context",
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
    Phrase(
        "new_instructions.announced",
        "new_instructions",
        "override_instructions",
        _DENY,
        "injected new instructions",
        "new updated real actual revised overriding system begin start enter initiate end your"
        " the all allprevious",
        "instructions instruction directives directive prompt",
        r"\b(?:new|updated|real|actual|revised|overriding)\s+(?:system\s+)?(?:instructions?"
        r"|directives?|system\s+prompt)\s?(?:(?:is|are)\s?)?:"
        r"|\bnew\W+system\W+prompt\b|\bsystem\W+prompt\W+(?:override|update|injection)\b"
        r"|\b(?:begin|start|enter|initiate)\W+new\W+instructions"
        r"|\bend\W+(?:of\W+)?(?:out\W+of\W+date|old|previous|system)\W+(?:instructions|prompt)\b"
        r"|\b(?:your|the)\W+(?:previous|prior|above|earlier|original)\W+instructions\W+(?:are|were)"
        r"\W+(?:false|void|cancel+ed|outdated|out\W+of\W+date|obsolete|revoked|no\W+longer)"
        r"|\ball\W*previous\W+instructions\W+are\b",
    ),
    Phrase(
        # Peers hand out tasks too; a "new" one replacing the current is a cue.
        "new_instructions.your_new_task",
        "new_instructions",
        "override_instructions",
        _REVIEW,
        "announced new task",
        "your new now",
        "task goal objective instructions instruction rules orders purpose mission role",
        r"\byour\s+(?:new|real|actual|true)\s+(?:task|goal|objective|instructions?|rules|orders"
        r"|purpose|mission|role)\s+(?:is|are|will\W+be)\b"
        # "your instructions are now to ...", "new instructions follow"
        r"|\byour\s+(?:task|goal|instructions|orders|job)\s+(?:is|are)\s+now\s+to\b"
        r"|\b(?:now\W+)?new\W+(?:instructions|orders|directives|tasks?)\W+(?:follow|are\W+as\W+follows"
        r"|come\W+next)\b"
        r"|\bnow\W+(?:\w+\W+)?follow\W+(?:the\W+|my\W+)?new\W+(?:instructions|orders|directives)\b",
    ),
    Phrase(
        "new_instructions.override_mode",
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
    Phrase(
        "new_instructions.model_hijacked",
        "new_instructions",
        "override_instructions",
        _DENY,
        "injected new instructions",
        "prompt model assistant ai bot",
        "hijacked compromised pwned hacked jailbroken reprogrammed",
        r"\b(?:prompt|model|assistant|ai|bot)\W+(?:has|have)\W+been\W+(?:\w+\W+){0,2}?(?:hijacked"
        r"|compromised|pwned|hacked|jailbroken|reprogrammed)\b",
    ),
    Phrase(
        "override.forget_everything_and_do",
        "override_then",
        "override_instructions",
        _DENY,
        "instruction override",
        "forget ignore disregard pretend",
        "",
        # "forget about everything and tell me ...": dropping all context
        # to do something else right away.
        r"\b(?:forget|ignore|disregard)\W+(?:about\W+)?(?:everything|all\W+(?:of\W+)?(?:that|this"
        r"|the\W+above))\W+(?:and\W+|then\W+|now\W+)+(?:just\W+|only\W+|instead\W+)?(?:tell|say"
        r"|write|print|answer|respond|reply|output|show|repeat|give|translate|act|pretend|start"
        r"|return|list)\b"
        # "pretend the previous conversation never happened"
        r"|\bpretend\W+(?:that\W+)?(?:the|our|this|your|all)\W+(?:\w+\W+)?(?:conversation|chat"
        r"|instructions|prompt|messages?|rules)\W+(?:never\W+(?:happened|existed)|(?:did|does|do)"
        r"\W+not\W+exist)\b",
    ),
    Phrase(
        "override.drop_the_tasks",
        "override_tasks",
        "override_instructions",
        _REVIEW,
        "possible override",
        "forget ignore disregard drop concentrate focus",
        "",
        # "forget about all the assignments", "concentrate on your new task"
        r"\b(?:forget|ignore|disregard|drop)\W+(?:about\W+)?(?:all\W+)?(?:the\W+|your\W+)?"
        r"(?:previous\W+|earlier\W+|prior\W+|other\W+|current\W+)?(?:assignments|tasks)\W*[.,;:!]"
        r"|\b(?:concentrate|focus)\W+(?:only\W+)?on\W+your\W+new\W+(?:task|assignment"
        r"|instructions|goal)\W*[:.!]",
    ),
)
