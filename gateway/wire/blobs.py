"""Base64 and ``data:`` payloads: the texts in them that the guard must see.

The decoded bytes go through :func:`gateway.wire.content.inspect`: a real
media file whose declared type agrees is skipped but for its metadata, an
archive has its members scanned, anything else is read as text.

A string that starts with ``data:`` is also scanned as it was sent unless it
is a well-formed data URL of a real media file: as a chat message or a tool
result the model reads it as text, not decoded, and a ``data:,`` prefix must
not switch the scan (or the injection check) off. A base64 field that does
not decode is scanned as sent; so is a short one that decodes to bytes of no
known kind, since a token pasted where base64 belongs often decodes without
error into garbage.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from gateway.wire import content
from gateway.wire.media import Base64Source, BytesSource, Source

_DATA_URL_META_MAX = 256
# RFC 2397: data:[<mediatype>][;base64],<data>, the media type with parameters.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_DATA_URL_META = re.compile(
    rf"(?:{_TOKEN}/{_TOKEN})?(?:\s*;\s*{_TOKEN}=(?:{_TOKEN}|\"[^\"]*\"))*(?:\s*;\s*base64)?",
    re.IGNORECASE,
)
_BASE64_SUFFIX = re.compile(r";\s*base64\s*$", re.IGNORECASE)

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_SPACE = b" \t\r\n\x0b\x0c"
_SHORT_BINARY_MAX = 512


def data_url_texts(url: str) -> list[str]:
    """The texts to scan for a string that starts with ``data:``."""
    comma = url.find(",", 5, _DATA_URL_META_MAX)
    if comma < 0:
        return [url]
    meta = url[5:comma]
    source: Source | None
    if _BASE64_SUFFIX.search(meta):
        source = base64_source(url, comma + 1)
        if source is None:
            return [url]
    else:
        source = BytesSource(unquote_to_bytes(url[comma + 1 :]))
    mime = meta.split(";", 1)[0].strip()
    found = content.inspect(source, (mime,))
    if found.kind == "media" and _DATA_URL_META.fullmatch(meta):
        return found.texts
    # Text without escapes is already in the URL as sent: no need to scan it twice.
    return [url, *(t for t in found.texts if t != url[comma + 1 :])]


def base64_texts(value: str, declared: str | None = None) -> list[str]:
    """The texts to scan for a base64 field; ``declared`` is its stated media type or name."""
    source = base64_source(value)
    if source is None:
        return [value]
    found = content.inspect(source, (declared,))
    if found.kind == "binary" and len(value) <= _SHORT_BINARY_MAX:
        return [value, *found.texts]
    return found.texts


def base64_source(text: str, start: int = 0) -> Base64Source | None:
    """``text[start:]`` as base64 to decode where read, or None when it is not base64.

    Standard or URL-safe alphabet, line breaks and missing padding are
    accepted; anything else (another character, ``=`` before the end) is not
    base64. Checking the alphabet is one ``translate`` over the bytes, the
    whole cost of a payload whose structure then proves it a real image.
    """
    if not text.isascii():
        return None
    raw = text.encode("ascii")
    # One pass over the text: what is not in the standard alphabet. translate
    # keeps order, so what is left of the prefix comes first.
    others = raw.translate(None, _ALPHABET)[len(raw[:start].translate(None, _ALPHABET)) :]
    pads = others.count(b"=")
    if len(others) > pads:
        if others.translate(None, _SPACE + b"-_="):
            return None
        body = raw[start:]
        if any(c in others for c in _SPACE):
            body = body.translate(None, _SPACE)
        if b"-" in others or b"_" in others:
            body = body.translate(_URLSAFE)
        raw, start = body, 0
    end = len(raw) - pads
    # Padding ends the text, and is at most what the last group needs.
    if raw.count(b"=", end) != pads or pads > (start - end) % 4 or (end - start) % 4 == 1:
        return None
    return Base64Source(raw, start, end)
