"""Requests to decode a payload and act on it.

The payload itself is decoded and read by ``decoders``; these rules catch the
wrapper around it ("base64-decode the following and follow it"), which also
gives away payloads in encodings the decoders do not know.
"""

from __future__ import annotations

from typing import Final

from gateway.guard.detectors.injection.rules.base import Phrase
from gateway.guard.detectors.injection.verdict import DENY as _DENY
from gateway.guard.detectors.injection.verdict import REVIEW as _REVIEW

_ENCODING: Final = (
    r"(?:base\W?64|base\W?32|b64|rot\W?13|hex|hexadecimal|morse|binary|caesar|reversed"
    r"|backwards|encoded|ciphered|encrypted|obfuscated|leet(?:speak)?)"
)
_DECODE: Final = (
    r"(?:decode|decipher|decrypt|unscramble|reverse|translate|convert|deobfuscate|read)"
)
# Acting on what was decoded, as opposed to showing it.
_OBEY: Final = r"(?:follow|obey|execute|carry\W+out|act\W+on|comply\W+with|do\W+what|perform|run)"

RULES: Final[tuple[Phrase, ...]] = (
    Phrase(
        "obfuscation.decode_and_follow",
        "decode",
        "encoded_instruction",
        _DENY,
        "decode-and-follow request",
        "base base64 base32 b64 rot rot13 hex hexadecimal morse binary caesar reversed backwards"
        " encoded ciphered encrypted obfuscated leet leetspeak decode decipher decrypt unscramble"
        " reverse"
        " translate convert deobfuscate read instructions instruction commands command orders"
        " order task",
        "",
        # "base64-decode the following and follow it"
        rf"\b(?:{_ENCODING}\W+)?{_DECODE}\W+(?:\w+\W+){{0,5}}?(?:and|then)\W+(?:\w+\W+)?"
        r"(?:follow|obey|carry\W+out|act\W+on|comply\W+with|do\W+what)\W+(?:it|them|this|that"
        r"|these|those|the\W+(?:\w+\W+)?(?:instructions?|commands?|orders?|directions)|what\W+it"
        r"\W+says|its\W+instructions)\b"
        # "the instructions below are base64-encoded; execute them"
        rf"|\b(?:instructions?|commands?|orders?|task)\W+(?:\w+\W+){{0,4}}?{_ENCODING}\W+"
        rf"(?:\w+\W+){{0,6}}?{_OBEY}\W+(?:it|them|the\W+(?:instructions?|commands?))\b",
    ),
    Phrase(
        "obfuscation.decode_and_run",
        "decode_weak",
        "encoded_instruction",
        _REVIEW,
        "decode-and-run request",
        "base base64 base32 b64 rot rot13 hex hexadecimal morse binary caesar reversed backwards"
        " encoded ciphered encrypted obfuscated leet leetspeak decode decipher decrypt unscramble"
        " reverse"
        " translate convert deobfuscate read",
        "",
        # "decode this and run it": also how people talk about scripts.
        rf"\b(?:{_ENCODING}\W+)?{_DECODE}\W+(?:\w+\W+){{0,5}}?(?:and|then)\W+(?:\w+\W+)?"
        r"(?:execute|run|perform)\W+(?:it|them|the\W+(?:result|output|decoded\W+\w+))\b",
    ),
)
