"""Sending private context away, hiding actions from the user, unrequested actions."""

from __future__ import annotations

from typing import Final

from gateway.guard.detectors.injection.rules.base import Phrase
from gateway.guard.detectors.injection.verdict import DENY as _DENY
from gateway.guard.detectors.injection.verdict import REVIEW as _REVIEW

RULES: Final[tuple[Phrase, ...]] = (
    # Sending private context somewhere: an address or URL is the tell.
    Phrase(
        "exfiltration.send_to_address",
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
    Phrase(
        "concealment.do_not_tell_user",
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
    Phrase(
        "action.run_system_command",
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
)
