"""Base64 and ``data:`` payloads: the texts in them that the guard must see.

A payload is skipped only when its bytes are binary; text in any wrapping
is decoded and scanned.
"""

from __future__ import annotations

import base64
import binascii
import codecs
from urllib.parse import unquote_to_bytes

_DATA_URL_META_MAX = 256
_URLSAFE_TO_STANDARD = str.maketrans("-_", "+/")
# Base64 characters decoded to decide whether the rest is worth decoding; a
# multiple of 4, and enough to get past any text-like file header.
_SNIFF_CHARS = 4096
_SNIFF_BYTES = _SNIFF_CHARS // 4 * 3
_SHORT_BINARY_MAX = 512


def data_url_texts(url: str) -> list[str]:
    """The texts to scan for a string that starts with ``data:``."""
    return [_data_url_text(url)]


def base64_texts(value: str, declared: str | None = None) -> list[str]:
    """The texts to scan for a base64 field; ``declared`` is its stated media type or name."""
    return [_base64_text(value, value)]


def _data_url_text(url: str) -> str:
    """What to scan for a ``data:`` URL: its decoded text, or "" for a binary payload."""
    comma = url.find(",", 5, _DATA_URL_META_MAX)
    if comma < 0:
        return url
    body = url[comma + 1 :]
    if url[5:comma].rstrip().lower().endswith(";base64"):
        return _base64_text(body, url)
    return _bytes_text(unquote_to_bytes(body), url)


def _base64_text(data: str, as_sent: str) -> str:
    """What to scan for base64 ``data``: its decoded text, or "" for a binary payload.

    Standard or URL-safe alphabet, line breaks and missing padding are
    accepted; what is not base64 at all is scanned ``as_sent``. Only the first
    few KiB are decoded to tell a large binary payload, so a 10 MB image costs
    no more than a small one.
    """
    if not data.isascii():
        return as_sent
    compact = "".join(data.split())
    if "-" in compact or "_" in compact:
        compact = compact.translate(_URLSAFE_TO_STANDARD)
    compact += "=" * (-len(compact) % 4)
    try:
        if len(compact) > _SNIFF_CHARS:
            head = base64.b64decode(compact[:_SNIFF_CHARS], validate=True)
            if _is_binary(head, complete=False):
                return _binary(as_sent)
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return as_sent
    return _bytes_text(raw, as_sent)


def _bytes_text(raw: bytes, as_sent: str) -> str:
    if _is_binary(raw[:_SNIFF_BYTES], complete=len(raw) <= _SNIFF_BYTES):
        return _binary(as_sent)
    return raw.decode("utf-8", "replace")


def _is_binary(head: bytes, *, complete: bool) -> bool:
    """A NUL or invalid UTF-8; ``complete`` False allows a sequence cut at the end."""
    if b"\0" in head:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=complete)
    except UnicodeDecodeError:
        return True
    return False


def _binary(as_sent: str) -> str:
    # A short value is scanned as sent: a token pasted where base64 belongs often
    # decodes without error into garbage, and real attachments are far longer.
    return as_sent if len(as_sent) <= _SHORT_BINARY_MAX else ""
