"""Request bodies to segments, sans-IO: decoding, parsing, choosing the adapter.

Every body the gateway forwards is read here first. What cannot be read is
refused, never forwarded unscanned.
"""

from __future__ import annotations

import binascii
import logging
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.message import Message
from email.utils import collapse_rfc2231_value
from typing import Final
from urllib.parse import parse_qsl

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from gateway.errors import BadRequest, TooLarge, UnsupportedMedia
from gateway.guard.floor import shown
from gateway.wire import content, generic, jsontext, nested
from gateway.wire.archives import Unsupported
from gateway.wire.base import PayloadError, Segment, Trust
from gateway.wire.routes import adapter_for

# JSON may spell a lone UTF-16 surrogate as an escape; such text is not valid
# Unicode, and detectors and models may read it differently, so it is refused.
# Built with chr(): mypyc compiles no surrogate in a string literal.
_SURROGATE: Final = re.compile(f"[{chr(0xD800)}-{chr(0xDFFF)}]")

_TEXT_TYPES: Final = ("text/", "application/x-ndjson", "application/jsonl", "application/xml")


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
            f"Content-Encoding {shown(enc)!r} is not supported; send gzip, deflate or identity"
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
        raise _not_utf8(exc) from exc


def _not_utf8(exc: UnicodeDecodeError) -> BadRequest:
    return BadRequest(
        f"request body is not valid UTF-8 (byte offset {exc.start})", code="invalid_utf8"
    )


def parse_json(body: bytes) -> object:
    try:
        return jsontext.loads_utf8(body)
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc) from exc
    except jsontext.DuplicateKey as exc:
        raise BadRequest("JSON object has a duplicate key", code="invalid_json") from exc
    except jsontext.JSONTextError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}", code="invalid_json") from exc


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
_IDENTITY_TRANSFER: Final = ("", "7bit", "8bit", "binary")
# Part headers whose meaning is known; any other is scanned as text.
_KNOWN_HEADERS: Final = frozenset(
    {"content-disposition", "content-type", "content-transfer-encoding"}
)


# python-multipart logs a warning for each malformed body before it raises:
# a client could fill the log with them, and the 400 already says it.
_QUIET: Final = logging.Logger("python_multipart.quiet", logging.CRITICAL + 1)


@dataclass(slots=True)
class _Part:
    headers: list[tuple[str, str]] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)


class _Form:
    """python-multipart's sans-IO parser, fed the whole body, collecting parts."""

    def __init__(self, boundary: bytes) -> None:
        self.parts: list[_Part] = []
        self.ended = False
        self._field = b""
        self._value = b""
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._begin,
                "on_part_data": self._data,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value,
                "on_header_end": self._header_end,
                "on_end": self._end,
            },
        )
        self.parser.logger = _QUIET

    def _begin(self) -> None:
        if len(self.parts) >= generic.MAX_SEGMENTS:
            raise BadRequest(
                f"request has more than {generic.MAX_SEGMENTS} form parts", code="invalid_payload"
            )
        self.parts.append(_Part())

    def _data(self, data: bytes, start: int, end: int) -> None:
        self.parts[-1].data.append(data[start:end])

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        # Header bytes are UTF-8 from browsers and the SDKs; anything else is
        # still read, byte for byte.
        name = self._field.decode("latin-1").strip().lower()
        value = _header_text(self._value).strip()
        self.parts[-1].headers.append((name, value))
        self._field = self._value = b""

    def _end(self) -> None:
        self.ended = True


def _header_text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _split_form(content_type: str, body: bytes) -> tuple[bytes, list[_Part], bytes]:
    """(preamble, parts, epilogue) of a multipart body."""
    boundary = parse_options_header(content_type)[1].get(b"boundary")
    if not boundary:
        raise BadRequest("multipart body could not be parsed", code="invalid_multipart")
    delimiter = b"--" + boundary
    # A preamble before the first delimiter and an epilogue after the last are
    # ignored by every parser, and still leave the gateway: both are scanned.
    start = 0 if body.startswith(delimiter) else body.find(b"\r\n" + delimiter)
    if start < 0:
        raise BadRequest("multipart body has no parts", code="invalid_multipart")
    preamble = body[:start]
    if start:
        start += 2
    closing = body.find(b"\r\n" + delimiter + b"--", start)
    if closing < 0 and body.startswith(delimiter + b"--", start):
        closing = start - 2
    form = _Form(boundary)
    try:
        form.parser.write(body[start:])
    except MultipartParseError as exc:
        raise BadRequest(
            "multipart body could not be parsed: a delimiter or part header is malformed",
            code="invalid_multipart",
        ) from exc
    if not form.ended or closing < 0:
        raise BadRequest(
            "multipart body ends before its closing delimiter", code="invalid_multipart"
        )
    epilogue = body[closing + 2 + len(delimiter) + 2 :]
    return preamble, form.parts, epilogue


def _decoded(part: _Part) -> bytes:
    raw = b"".join(part.data)
    transfer = _header(part, "content-transfer-encoding").lower()
    try:
        if transfer == "base64":
            return binascii.a2b_base64(raw)
        if transfer == "quoted-printable":
            return binascii.a2b_qp(raw)
    except binascii.Error as exc:
        raise BadRequest(
            "a multipart part is not valid base64 for its transfer encoding",
            code="invalid_multipart",
        ) from exc
    return raw


def _header(part: _Part, name: str) -> str:
    for key, value in part.headers:
        if key == name:
            return value
    return ""


def _disposition(value: str) -> tuple[list[str], str | None, list[str]]:
    """(field names, file name, other text) of a Content-Disposition value.

    ``name`` and ``name*`` (RFC 2231) may disagree, and parsers differ on which
    wins: every distinct name is returned, the first as the field's name.
    """
    message = Message()
    message["content-disposition"] = value
    names: list[str] = []
    filenames: list[str] = []
    other: list[str] = []
    # typeshed has every value a str, but an RFC 2231 one is (charset,
    # language, text), and compiled code checks the declared type.
    params: Sequence[tuple[str, str | tuple[str | None, str | None, str]]]
    params = message.get_params([], header="content-disposition")
    for key, raw in params[1:]:
        try:
            text = collapse_rfc2231_value(raw)
        except (LookupError, ValueError):
            # An RFC 2231 charset no codec has: the value as it was sent.
            text = raw[2] if isinstance(raw, tuple) else raw
        base = key.lower().rstrip("*")
        if base == "name":
            names.append(text)
        elif base == "filename":
            filenames.append(text)
        else:
            other.append(f"{key}={text}")
    filename = None
    if filenames:
        filename = filenames[0]
        other.extend(name for name in filenames[1:] if name != filename)
    return list(dict.fromkeys(names)), filename, other


def _multipart(content_type: str, body: bytes) -> list[Segment]:
    preamble, parts, epilogue = _split_form(content_type, body)
    out: list[Segment] = []
    for path, extra in (("form.preamble", preamble), ("form.epilogue", epilogue)):
        if extra.strip():
            out.extend(_segments(path, "field", content.texts(extra), None))
    for i, part in enumerate(parts):
        out.extend(_part_segments(i, part))
    return out


def _part_segments(i: int, part: _Part) -> list[Segment]:
    out: list[Segment] = []
    label = f"form[{i}]"
    names, filename, unusual = _disposition(_header(part, "content-disposition"))
    name = names[0] if names else ""
    # A field name reaches the upstream like a value; like a JSON key, it is
    # quoted in a path only when it is plainly a name, since paths are logged.
    if name and generic.is_plain_key(name):
        label = f"{label}({name})"
    elif name:
        out.append(Segment(f"{label}.name", "field", name, Trust.TRUSTED, i))
    for n, alias in enumerate(names[1:], 1):
        out.append(Segment(f"{label}.name#{n}", "field", alias, Trust.TRUSTED, i))
    if filename:
        out.append(Segment(f"{label}.filename", "file", filename, Trust.TRUSTED, i))
    seen: set[str] = set()
    for key, value in part.headers:
        # Headers of no known meaning, or a known one repeated (which one a
        # parser keeps varies), reach the upstream as sent.
        if key not in _KNOWN_HEADERS or key in seen:
            unusual.append(f"{key}: {value}")
        seen.add(key)
    if unusual:
        out.append(Segment(f"{label}.headers", "field", "\n".join(unusual), Trust.TRUSTED, i))
    role = "file" if filename else "field"
    declared = (_header(part, "content-type") or None, filename)
    found = content.inspect(_decoded(part), declared)
    if not filename and name and found.kind == "text" and len(found.texts) == 1:
        # A text field is judged with its name as context, as a query string's
        # is: `password=...` holds a password where `...` alone may not say so.
        text = found.texts[0]
        out.append(Segment(label, role, f"{name}={text}", Trust.TRUSTED, i))
        out.extend(nested.file_segments(text, label, i))
    else:
        out.extend(_segments(label, role, found.texts, i))
    if _header(part, "content-transfer-encoding").lower() not in _IDENTITY_TRANSFER:
        # The upstream receives the encoded text; it is scanned too.
        raw = content.texts(b"".join(part.data))
        out.extend(_segments(f"{label}.raw", role, raw, i))
    return out


def _segments(path: str, role: str, texts: list[str], index: int | None) -> list[Segment]:
    """Segments for the texts of one payload, and for requests written in them (JSONL)."""
    out: list[Segment] = []
    for n, text in enumerate(texts):
        if not text:
            continue
        where = path if n == 0 else f"{path}(decoded#{n})"
        out.append(Segment(where, role, text, Trust.TRUSTED, index))
        out.extend(nested.file_segments(text, where, index))
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
    # Archives in all of the request's payloads share one set of bounds.
    with content.RequestBudget():
        try:
            payload = _body_segments(path, media, content_type or "", body, segments)
        except Unsupported as exc:
            raise UnsupportedMedia(str(exc)) from exc
        except PayloadError as exc:
            # An archive past its bounds, or requests in an uploaded file that
            # cannot be read in full (nested.file_segments).
            raise BadRequest(str(exc), code="invalid_payload") from exc
    if len(segments) > generic.MAX_SEGMENTS:
        # The JSON adapters stop at the limit themselves; forms and queries here.
        raise BadRequest(
            f"request has more than {generic.MAX_SEGMENTS} text fields", code="invalid_payload"
        )
    _refuse_surrogates(segments)
    return segments, payload


def _body_segments(
    path: str, media: str, content_type: str, body: bytes, segments: list[Segment]
) -> object | None:
    """Appends the body's segments; returns its parsed JSON, if it is JSON."""
    if _is_json(media):
        payload = parse_json(body)
        segments.extend(_adapter_segments(path, payload))
        return payload
    if media == "multipart/form-data":
        segments.extend(_multipart(content_type, body))
    elif media == "application/x-www-form-urlencoded":
        text = decode_utf8(body)
        for i, (key, value) in enumerate(parse_qsl(text, keep_blank_values=True)):
            segments.append(Segment(f"form[{i}]", "field", f"{key}={value}", Trust.TRUSTED, None))
    elif media.startswith(_TEXT_TYPES) or media == "":
        # No declared type: read it as JSON when it parses. Otherwise, as any
        # uploaded file: text in any Unicode encoding, an archive's members, or
        # the printable runs of what is neither.
        if media == "":
            payload = _lenient_json(body)
            if payload is not None:
                segments.extend(_adapter_segments(path, payload))
                return payload
        texts = content.texts(body, media or None)
        segments.extend(_segments("body", "unknown", texts, None))
    else:
        raise UnsupportedMedia(
            f"Content-Type {shown(media)!r} cannot be inspected; send application/json",
        )
    return None


def _lenient_json(body: bytes) -> object | None:
    try:
        payload: object = jsontext.loads_utf8(body)
    except (UnicodeDecodeError, jsontext.JSONTextError):
        return None
    return payload


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
