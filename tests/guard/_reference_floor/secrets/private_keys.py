"""PEM private key blocks, however they were pasted.

Every label (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK, and the post-quantum
ones with dashes: ML-DSA-65, ML-KEM-768, SLH-DSA-SHA2-128S), in JSON or code
strings with escaped line breaks, concatenated across lines, behind comment
marks, in log output with a timestamp or build-step prefix on every line, and
cut off before the footer. PuTTY and age keys are formats in ``rules.yaml``.
"""

from __future__ import annotations

import re

from tests.guard._reference_floor.secrets.common import _A, _PRIO_SPECIFIC, _Ctx
from tests.guard._reference_floor.secrets.values import _has_marker

_BEGIN_RE = re.compile(r"BEGIN(?<=-----BEGIN)", _A)
PEM_HEAD_RE = re.compile(r"-----BEGIN [A-Z0-9 _-]{0,40}?PRIVATE KEY(?: BLOCK)?-----", _A)
PEM_END_RE = re.compile(r"-----END [A-Z0-9 _-]{0,40}?PRIVATE KEY(?: BLOCK)?-----", _A)
# Between the header and the key material: real or escaped line breaks (escaped
# once or more), quotes and concatenation of keys pasted into code, comment and
# quote marks in front of every line (# // -- ; > * ! %), "Proc-Type:" lines.
_PEM_BODY_RE = re.compile(
    r"(?:\s|\\+[nr]|[\"',+#;>*!%]|/{2,}(?=\s)|--(?=\s)"
    r"|[A-Za-z-]{2,30}: [^\n\\]{1,200}(?:\\+n|\n)){0,64}"
    r"([A-Za-z0-9+/=]{20,4096}+)(?![ \t]+[A-Za-z])",
    _A,
)
# Log output: every line carries a prefix (a timestamp and level, a build step
# "#12 0.134", a container name and "|"). The first line after the header is
# then some prefix, a separator, and nothing but key material to its end.
# Only separators start the material, so the prefix costs one try per separator.
_PEM_LOG_LINE_RE = re.compile(
    r"[ \t\"']*\r?\n[^\n]{0,80}?[ \t|>:\]]([A-Za-z0-9+/=]{40,4096}+)[ \t]*\r?(?:\n|\Z)", _A
)
# What a header may be followed by and still be a key that was cut off.
_PEM_BLANK_RE = re.compile(r"(?:[ \t\r\n\"']|\\n)*", _A)
_B64_RUN_RE = re.compile(r"[A-Za-z0-9+/=]{20,8192}", _A)


def _on_begin(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    start = m.start() - 5
    hm = PEM_HEAD_RE.match(text, start)
    if hm is None:
        return
    body_start = hm.end()
    # Key blocks are a few KB; look for the footer before the next header.
    limit = text.find("-----BEGIN", body_start, body_start + 32768)
    limit = body_start + 32768 if limit < 0 else limit
    end_at = text.find("-----END ", body_start, limit)
    em = PEM_END_RE.match(text, end_at) if end_at >= 0 else None
    body_end = em.start() if em is not None else min(len(text), body_start + 4096)
    # The material of this key ends before the next header (read by its own turn).
    bm = _PEM_BODY_RE.match(text, body_start, min(body_end, limit))
    if bm is None or bm.group(1) is None:
        bm = _PEM_LOG_LINE_RE.match(text, body_start, min(body_end, limit))
    if bm is not None and bm.group(1) is not None:
        material = text[bm.start(1) : min(body_end, bm.start(1) + 400)]
        if not _has_marker(material) and "EXAMPLE" not in material:
            end = em.end() if em is not None else _b64_block_end(text, body_start)
            ctx.add(start, end, "private_key", _PRIO_SPECIFIC)
        return
    blank = _PEM_BLANK_RE.match(text, body_start, body_end)
    if em is None and blank is not None and blank.end() == body_end:
        # A bare header at the very end: the key was cut off, not absent.
        ctx.add(start, body_start, "private_key", _PRIO_SPECIFIC)


def _b64_block_end(text: str, pos: int) -> int:
    """End of the key material after an unterminated PEM header."""
    end = pos
    run = _B64_RUN_RE.search(text, pos, pos + 8192)
    while run is not None and run.start() - end < 16:
        end = run.end()
        run = _B64_RUN_RE.search(text, end, end + 8192)
    return end
