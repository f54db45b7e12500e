"""`outbound.on_secret: redact`: a JSON request with its secrets replaced, so it may still go.

Sans-IO. Every string of the payload (object keys too) that holds a finding
the team does not allow is rewritten: built-in secrets through `redact` (which
also finds a secret in its base64, hex or escaped spelling), a team's
deny-custom-rule matches by their spans; each becomes ``[REDACTED:<kind>]``.
Values the team allows in such a string are kept. The result is plain JSON
again, so the upstream and the SDK see an ordinary exchange. The caller
inspects the rewritten request once more and denies it if the floor still
finds anything: redaction never lets through what it missed.
"""

from __future__ import annotations

from collections.abc import Callable
from secrets import token_hex

from gateway.guard import redact
from gateway.wire.generic import NAMES, is_plain_key

# (text, path) -> whether a finding there must go, and the allowed values to keep.
Judge = Callable[[str, str], tuple[bool, list[str]]]
# text -> the text with a team's deny-custom-rule matches replaced by markers.
Mark = Callable[[str], str]


def redact_payload(payload: object, judge: Judge, mark: Mark) -> object:
    """``payload`` with each string holding a finding that must go rewritten."""

    nonce = token_hex(8)

    def text(value: str, path: str) -> str:
        must_go, keep = judge(value, path)
        if not must_go:
            return value
        # Allowed values stay as they are: set aside behind placeholders the
        # floor finds nothing in, and put back once the rest is redacted.
        held = [(f"\x00{nonce}:{i}\x00", v) for i, v in enumerate(keep)]
        for placeholder, kept in held:
            value = value.replace(kept, placeholder)
        value = mark(redact.redact(value))
        for placeholder, kept in held:
            value = value.replace(placeholder, kept)
        return value

    def walk(node: object, path: str) -> object:
        if isinstance(node, str):
            return text(node, path)
        if isinstance(node, dict):
            out: dict[object, object] = {}
            prefix = f"{path}." if path else ""
            for position, (key, value) in enumerate(node.items()):
                # Paths as the adapters write them (gateway.wire.generic.member_path):
                # a key that is not a plain name is its position, so no key can
                # pass for the path of another field (a credential path).
                new_key = key if key in NAMES else text(key, f"{prefix}<key#{position}>")
                plain = key in NAMES or is_plain_key(key)
                where = prefix + (key if plain else f"<value#{position}>")
                out[new_key] = walk(value, where)
            return out
        if isinstance(node, list):
            return [walk(item, f"{path}[{i}]") for i, item in enumerate(node)]
        return node

    return walk(payload, "")
