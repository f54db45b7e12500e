"""Request bodies to segments, sans-IO: decoding, parsing, choosing the adapter.

Every body the gateway forwards is read here first. What cannot be read is
refused, never forwarded unscanned.
"""

from __future__ import annotations

import json
import re
import zlib
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from email.utils import collapse_rfc2231_value
from urllib.parse import parse_qsl

from gateway.errors import BadRequest, TooLarge, UnsupportedMedia
from gateway.guard.detectors.secrets import unless_secret
from gateway.wire import generic
from gateway.wire.base import PayloadError, Segment, Trust
from gateway.wire.routes import adapter_for

# JSON may spell a lone UTF-16 surrogate as an escape; such text is not valid
# Unicode, and detectors and models may read it differently, so it is refused.
_SURROGATE = re.compile("[\ud800-\udfff]")

_TEXT_TYPES = ("text/", "application/x-ndjson", "application/jsonl", "application/xml")


def decode_content(body: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo a request Content-Encoding, bounded so a small bomb cannot expand past `limit`."""
    if not encoding or encoding.strip().lower() in ("identity", ""):
        return body
    enc = encoding.strip().lower()
    if enc in ("gzip", "x-gzip"):
        wbits = 16 + zlib.MAX_WBITS
    elif enc == "deflate":
        wbits = zlib.MAX_WBITS
    else:
        raise UnsupportedMedia(
            f"Content-Encoding {unless_secret(enc)!r} is not supported; "
            "send gzip, deflate or identity"
        )
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(
            "request body is not valid compressed data", code="invalid_encoding"
        ) from exc
    if len(out) > limit or inflater.unconsumed_tail:
        raise TooLarge(f"decompressed request body exceeds {limit} bytes")
    if not inflater.eof or inflater.unused_data:
        # A truncated stream, or bytes after its end: a second gzip member is
        # one that many upstream decoders (Go's, Python's gzip module) read on
        # and this check would never have seen.
        raise BadRequest(
            "request body is not one complete compressed stream", code="invalid_encoding"
        )
    return out


def decode_utf8(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"request body is not valid UTF-8 (byte offset {exc.start})", code="invalid_utf8"
        ) from exc


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey
    return out


# Parsers disagree on duplicate keys (first wins or last wins); if ours and the
# upstream's disagree, text we never scanned would reach the model. Refuse them.
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def parse_json(body: bytes) -> object:
    text = decode_utf8(body)
    try:
        return _DECODER.decode(text)
    except _DuplicateKey as exc:
        raise BadRequest("JSON object has a duplicate key", code="invalid_json") from exc
    except RecursionError as exc:
        raise BadRequest("JSON nesting is too deep", code="invalid_json") from exc
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            code="invalid_json",
        ) from exc


def _media_type(content_type: str | None) -> str:
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def _is_json(media: str) -> bool:
    return media == "application/json" or media.endswith("+json")


def _adapter_segments(path: str, payload: object) -> list[Segment]:
    try:
        return adapter_for(path)(payload)
    except PayloadError as exc:
        raise BadRequest(str(exc), code="invalid_payload") from exc
    except RecursionError as exc:
        raise BadRequest("JSON nesting is too deep", code="invalid_json") from exc


# Transfer encodings the upstream does not undo (RFC 7578 4.7 deprecates them
# for form data): its raw text is what arrives, so that is scanned as well.
_IDENTITY_TRANSFER = ("", "7bit", "8bit", "binary")


def _multipart(content_type: str, body: bytes) -> list[Segment]:
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1", "replace")
    message: Message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise BadRequest("multipart body could not be parsed", code="invalid_multipart")
    out: list[Segment] = []
    for i, part in enumerate(message.get_payload()):
        assert isinstance(part, Message)
        label = f"form[{i}]"
        name = collapse_rfc2231_value(part.get_param("name", "", header="content-disposition"))
        # A field name reaches the upstream like a value; like a JSON key, it is
        # quoted in a path only when it is plainly a name, since paths are logged.
        if name and generic.is_plain_key(name):
            label = f"{label}({name})"
        elif name:
            out.append(Segment(f"{label}.name", "field", name, Trust.TRUSTED, i))
        filename = part.get_filename()
        if filename:
            out.append(Segment(f"{label}.filename", "file", str(filename), Trust.TRUSTED, i))
        role = "file" if filename else "field"
        if part.is_multipart():
            # A nested multipart is one opaque value to a form-data parser: the
            # upstream gets its bytes, inner headers and all.
            texts = [part.as_bytes(policy=HTTP)]
        else:
            decoded = part.get_payload(decode=True)
            texts = [decoded if isinstance(decoded, bytes) else b""]
            transfer = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
            if transfer not in _IDENTITY_TRANSFER:
                raw = part.get_payload(decode=False)
                texts.append(str(raw).encode("utf-8", "surrogateescape"))
        for n, data in enumerate(texts):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                # Binary uploads (audio, images, PDFs) carry no text the detectors can read.
                continue
            path = label if n == 0 else f"{label}.raw"
            out.append(Segment(path, role, text, Trust.TRUSTED, i))
    return out


def request_segments(
    path: str, query: str, content_type: str | None, body: bytes
) -> tuple[list[Segment], object | None]:
    """Every text in a request that the outbound check must see, plus the parsed JSON if any.

    `body` is already content-decoded. `path` is the upstream-relative path.
    """
    segments: list[Segment] = []
    # Blank values are kept: a bare `?<secret>` is a key with no value, and
    # dropping it would forward the secret unscanned.
    if query:
        for i, (key, value) in enumerate(parse_qsl(query, keep_blank_values=True)):
            segments.append(Segment(f"query[{i}]", "query", f"{key}={value}", Trust.TRUSTED, None))
    if not body:
        return segments, None
    media = _media_type(content_type)
    payload: object | None = None
    if _is_json(media):
        payload = parse_json(body)
        segments.extend(_adapter_segments(path, payload))
    elif media == "multipart/form-data":
        segments.extend(_multipart(content_type or "", body))
    elif media == "application/x-www-form-urlencoded":
        text = decode_utf8(body)
        for i, (key, value) in enumerate(parse_qsl(text, keep_blank_values=True)):
            segments.append(Segment(f"form[{i}]", "field", f"{key}={value}", Trust.TRUSTED, None))
    elif media.startswith(_TEXT_TYPES) or media == "":
        # No declared type: read it as JSON when it parses, else as text; an
        # unreadable body is refused rather than forwarded unscanned.
        text = decode_utf8(body)
        if media == "":
            try:
                payload = _DECODER.decode(text)
            except (ValueError, RecursionError):
                payload = None
            if payload is not None:
                segments.extend(_adapter_segments(path, payload))
                _refuse_surrogates(segments)
                return segments, payload
        segments.append(Segment("body", "unknown", text, Trust.TRUSTED, None))
    else:
        raise UnsupportedMedia(
            f"Content-Type {unless_secret(media)!r} cannot be inspected; send application/json",
        )
    if len(segments) > generic.MAX_SEGMENTS:
        # The JSON adapters stop at the limit themselves; forms and queries here.
        raise BadRequest(
            f"request has more than {generic.MAX_SEGMENTS} text fields", code="invalid_payload"
        )
    _refuse_surrogates(segments)
    return segments, payload


def _refuse_surrogates(segments: list[Segment]) -> None:
    # Only a JSON \uD8xx-\uDFxx escape can produce a surrogate (strict UTF-8
    # decoding refuses encoded ones). An ASCII str says so in its header, so
    # `isascii()` clears a text without reading it, unlike a search of the body.
    search = _SURROGATE.search
    for segment in segments:
        if not segment.text.isascii() and search(segment.text):
            raise BadRequest(
                f"lone UTF-16 surrogate escape in {segment.path}; text must be valid Unicode",
                code="invalid_utf8",
            )


def require_json(path: str, content_type: str | None) -> None:
    """The model APIs take JSON only; anything else is refused before parsing."""
    if adapter_for(path) is not generic.segments and not _is_json(_media_type(content_type)):
        raise UnsupportedMedia(
            "Content-Type must be application/json for this endpoint",
            code="unsupported_media_type",
        )
