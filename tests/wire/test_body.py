"""Request bodies, sans-IO: content decoding and strict JSON parsing."""

from __future__ import annotations

import gzip
import io
import logging
import zipfile
import zlib

import pytest

from gateway.errors import BadRequest, TooLarge, UnsupportedMedia
from gateway.wire import archives, nested
from gateway.wire.base import PayloadError, Segment, Trust
from gateway.wire.body import decode_content, parse_json, request_segments
from tests.wire.test_media import jpeg, mp3, png, wav

CHAT = "/v1/chat/completions"
BODY = b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}'


@pytest.mark.parametrize("encoding", [None, "", "identity", " Identity "])
def test_identity_is_the_body_itself(encoding: str | None) -> None:
    assert decode_content(BODY, encoding, 1 << 20) == BODY


@pytest.mark.parametrize(
    ("encoding", "data"),
    [
        pytest.param("gzip", gzip.compress(BODY), id="gzip"),
        pytest.param("x-gzip", gzip.compress(BODY), id="x-gzip"),
        pytest.param("GZIP", gzip.compress(BODY), id="GZIP"),
        pytest.param("deflate", zlib.compress(BODY), id="deflate"),
    ],
)
def test_compressed_bodies_are_decoded(encoding: str, data: bytes) -> None:
    assert decode_content(data, encoding, 1 << 20) == BODY


def test_a_second_gzip_member_is_refused() -> None:
    # Python's gzip module reads both members; the check would see one.
    hidden = b'{"role": "user", "content": "unseen"}'
    data = gzip.compress(BODY) + gzip.compress(hidden)
    assert gzip.decompress(data) == BODY + hidden
    with pytest.raises(BadRequest) as info:
        decode_content(data, "gzip", 1 << 20)
    assert info.value.code == "invalid_encoding"


@pytest.mark.parametrize(
    ("encoding", "data"),
    [
        pytest.param("gzip", gzip.compress(BODY)[:-6], id="gzip-without-trailer"),
        pytest.param("gzip", gzip.compress(BODY) + b"trailing", id="gzip-trailing-bytes"),
        pytest.param("deflate", zlib.compress(BODY)[:-3], id="deflate-truncated"),
        pytest.param("deflate", zlib.compress(BODY) + b"\x00", id="deflate-trailing-byte"),
        pytest.param("gzip", b"not gzip at all", id="not-gzip"),
    ],
)
def test_incomplete_or_trailing_streams_are_refused(encoding: str, data: bytes) -> None:
    with pytest.raises(BadRequest) as info:
        decode_content(data, encoding, 1 << 20)
    assert info.value.code == "invalid_encoding"


def test_a_bomb_stops_at_the_limit() -> None:
    with pytest.raises(TooLarge):
        decode_content(gzip.compress(b" " * 1_000_000), "gzip", 10_000)


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, gzip", "compress"])
def test_other_encodings_are_refused(encoding: str) -> None:
    with pytest.raises(UnsupportedMedia):
        decode_content(gzip.compress(BODY), encoding, 1 << 20)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "a": 2}',
        b'{"messages": [{"role": "user", "content": "x", "content": "y"}]}',
    ],
)
def test_duplicate_keys_are_refused_at_any_depth(raw: bytes) -> None:
    with pytest.raises(BadRequest) as info:
        parse_json(raw)
    assert info.value.code == "invalid_json"
    assert "duplicate key" in info.value.message


def test_invalid_utf8_names_its_offset() -> None:
    with pytest.raises(BadRequest) as info:
        parse_json(b'{"a": "\xff"}')
    assert info.value.code == "invalid_utf8"
    assert "offset 7" in info.value.message


def test_a_lone_surrogate_escape_is_refused() -> None:
    raw = b'{"model": "m", "messages": [{"role": "user", "content": "a\\ud800b"}]}'
    with pytest.raises(BadRequest) as info:
        request_segments(CHAT, "", "application/json", raw)
    assert info.value.code == "invalid_utf8"


def test_a_surrogate_pair_escape_is_text() -> None:
    raw = b'{"model": "m", "messages": [{"role": "user", "content": "\\ud83d\\ude00"}]}'
    segments, _ = request_segments(CHAT, "", "application/json", raw)
    assert [s.text for s in segments if s.path.startswith("messages")] == ["\U0001f600"]


def test_too_deep_nesting_is_refused_not_a_crash() -> None:
    raw = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(BadRequest) as info:
        parse_json(raw)
    assert info.value.code == "invalid_json"


@pytest.mark.parametrize(
    ("content_type", "body", "query"),
    [
        pytest.param(None, b"", "lonekey&a=1", id="query"),
        pytest.param("application/x-www-form-urlencoded", b"lonekey&a=1", "", id="form"),
    ],
)
def test_a_key_without_a_value_is_a_segment(
    content_type: str | None, body: bytes, query: str
) -> None:
    segments, _ = request_segments("/v1/files", query, content_type, body)
    texts = [s.text for s in segments]
    assert "lonekey=" in texts
    assert "a=1" in texts


# -- multipart/form-data --

BOUNDARY = "b0undary"
FORM = f"multipart/form-data; boundary={BOUNDARY}"
TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def _form(*parts: tuple[str, bytes]) -> bytes:
    """Parts as (header lines, content), joined as an HTTP client sends them."""
    out = b""
    for headers, content in parts:
        out += f"--{BOUNDARY}\r\n{headers}\r\n\r\n".encode() + content + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


def _texts(body: bytes) -> dict[str, str]:
    segments, payload = request_segments("/v1/files", "", FORM, body)
    assert payload is None
    return {s.path: s.text for s in segments}


def test_form_fields_and_text_files_are_segments() -> None:
    body = _form(
        ('Content-Disposition: form-data; name="purpose"', b"assistants"),
        (
            'Content-Disposition: form-data; name="file"; filename="notes.txt"\r\n'
            "Content-Type: text/plain",
            b"line one\nline two",
        ),
    )
    assert _texts(body) == {
        # a field is judged with its name as context, as in a query string
        "form[0](purpose)": "purpose=assistants",
        "form[1](file).filename": "notes.txt",
        "form[1](file)": "line one\nline two",
    }


def test_a_binary_file_has_no_text_segment() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"
    body = _form(
        ('Content-Disposition: form-data; name="file"; filename="a.png"', png),
    )
    assert _texts(body) == {"form[0](file).filename": "a.png"}


def test_a_field_name_that_is_not_a_name_is_scanned_and_never_a_path() -> None:
    body = _form((f'Content-Disposition: form-data; name="{TOKEN}"', b"value"))
    texts = _texts(body)
    assert texts["form[0].name"] == TOKEN
    assert all(TOKEN not in path for path in texts)


def test_a_nested_multipart_is_scanned_whole() -> None:
    # A form-data parser hands the nested part's bytes on as one value.
    inner = b"--inner\r\nContent-Type: text/plain\r\n\r\n" + TOKEN.encode() + b"\r\n--inner--\r\n"
    body = _form(
        (
            'Content-Disposition: form-data; name="file"\r\n'
            "Content-Type: multipart/mixed; boundary=inner",
            inner,
        )
    )
    assert TOKEN in _texts(body)["form[0](file)"]


def test_a_transfer_encoded_part_is_scanned_decoded_and_as_sent() -> None:
    body = _form(
        (
            'Content-Disposition: form-data; name="note"\r\nContent-Transfer-Encoding: base64',
            b"aGVsbG8gd29ybGQ=",
        )
    )
    assert _texts(body) == {
        "form[0](note)": "note=hello world",
        "form[0](note).raw": "aGVsbG8gd29ybGQ=",
    }


def test_an_rfc2231_field_name_is_read() -> None:
    body = _form(("Content-Disposition: form-data; name*=utf-8''caf%C3%A9", b"x"))
    texts = _texts(body)
    assert texts["form[0].name"] == "café"
    assert texts["form[0]"] == "café=x"


def test_a_form_without_parts_is_refused() -> None:
    with pytest.raises(BadRequest) as info:
        request_segments("/v1/files", "", "multipart/form-data", b"no boundary here")
    assert info.value.code == "invalid_multipart"


def test_a_form_with_too_many_fields_is_refused() -> None:
    from gateway.wire.generic import MAX_SEGMENTS

    body = "&".join(f"k{i}=v" for i in range(MAX_SEGMENTS + 1)).encode()
    with pytest.raises(BadRequest) as info:
        request_segments("/v1/x", "", "application/x-www-form-urlencoded", body)
    assert info.value.code == "invalid_payload"


# -- hostile numbers are bad input, not a guard failure --


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        pytest.param(b'{"n": ' + b"9" * 5000 + b"}", "too many digits", id="5000-digit integer"),
        pytest.param(b"-" + b"1" * 4301, "too many digits", id="4301-digit negative"),
        pytest.param(b'{"t": NaN}', "NaN", id="NaN"),
        pytest.param(b"[Infinity]", "Infinity", id="Infinity"),
        pytest.param(b'{"t": -Infinity}', "-Infinity", id="-Infinity"),
        pytest.param(b'{"t": 1e999}', "infinity", id="1e999"),
        pytest.param(b"[-1e999]", "infinity", id="-1e999"),
        pytest.param(b"[" + b"1" * 400 + b".5]", "infinity", id="400-digit float"),
    ],
)
def test_numbers_json_does_not_have_are_invalid_json(raw: bytes, says: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_json(raw)
    assert info.value.code == "invalid_json"
    assert says in info.value.message
    with pytest.raises(BadRequest):
        request_segments(CHAT, "", "application/json", raw)


def test_numbers_json_has_are_read() -> None:
    assert parse_json(b"[1e308, -0.0, 1e-999, " + b"7" * 4300 + b"]") == [
        1e308,
        -0.0,
        0.0,
        int("7" * 4300),
    ]


# -- multipart parts and raw bodies are payloads like any other --

ENV = f"GITHUB_TOKEN={TOKEN}\n".encode()


def _has_token(texts: dict[str, str]) -> bool:
    return any(TOKEN in text for text in texts.values())


def _file(
    name: str, data: bytes, content_type: str = "application/octet-stream"
) -> tuple[str, bytes]:
    disposition = f'Content-Disposition: form-data; name="file"; filename="{name}"'
    return (f"{disposition}\r\nContent-Type: {content_type}", data)


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize(
    "part",
    [
        pytest.param(_file(".env", b"\x00" + ENV * 10), id="leading NUL"),
        pytest.param(_file(".env", b"\xff" + ENV * 10), id="leading 0xFF"),
        pytest.param(_file("notes.txt", ENV.decode().encode("utf-16"), "text/plain"), id="UTF-16"),
        pytest.param(_file("notes.txt", ENV.decode().encode("utf-16-le")), id="UTF-16 no BOM"),
        pytest.param(_file("conf.zip", _zip({"conf/.env": ENV}), "application/zip"), id="zip"),
        pytest.param(_file("a.png", png()[:33] + ENV * 10, "image/png"), id="PNG header"),
        pytest.param(_file("a.png", png() + ENV, "image/png"), id="after a PNG"),
        pytest.param(_file("a.png", png() + ENV, "text/plain"), id="PNG labelled text"),
    ],
)
def test_text_in_an_uploaded_file_is_found(part: tuple[str, bytes]) -> None:
    assert _has_token(_texts(_form(part)))


@pytest.mark.parametrize(
    ("name", "data", "content_type"),
    [
        ("photo.png", png(), "image/png"),
        ("photo.jpg", jpeg(), "image/jpeg"),
        ("voice.wav", wav(), "audio/wav"),
        ("voice.mp3", mp3(), "audio/mpeg"),
        ("upload", png(), "application/octet-stream"),
    ],
)
def test_a_real_media_upload_has_no_text_segment(name: str, data: bytes, content_type: str) -> None:
    assert _texts(_form(_file(name, data, content_type))) == {"form[0](file).filename": name}


def test_a_password_field_is_judged_with_its_name() -> None:
    body = _form(('Content-Disposition: form-data; name="password"', b"hunter2-Blue-42"))
    assert _texts(body) == {"form[0](password)": "password=hunter2-Blue-42"}


def test_preamble_epilogue_and_unknown_headers_are_scanned() -> None:
    body = _form(
        (f'Content-Disposition: form-data; name="a"\r\nX-Note: {TOKEN}', b"1"),
        ('Content-Disposition: form-data; name="b"; note="n"', b"2"),
    )
    body = f"preamble {TOKEN}\r\n".encode() + body + f"epilogue {TOKEN}\r\n".encode()
    texts = _texts(body)
    assert TOKEN in texts["form.preamble"]
    assert TOKEN in texts["form.epilogue"]
    assert texts["form[0](a).headers"] == f"x-note: {TOKEN}"
    assert texts["form[1](b).headers"] == "note=n"


def test_every_spelling_of_a_field_name_is_scanned() -> None:
    # Parsers differ on whether name or name* wins.
    body = _form((f"Content-Disposition: form-data; name=\"a\"; name*=utf-8''{TOKEN}", b"1"))
    texts = _texts(body)
    assert texts["form[0](a)"] == "a=1"
    assert texts["form[0](a).name#1"] == TOKEN


def test_a_repeated_part_header_is_scanned() -> None:
    body = _form(
        (
            'Content-Disposition: form-data; name="a"\r\n'
            f'Content-Disposition: form-data; name="{TOKEN}"',
            b"1",
        )
    )
    assert TOKEN in _texts(body)["form[0](a).headers"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            _form(('Content-Disposition: form-data; name="a"', b"1"))[:-4],
            id="no closing delimiter",
        ),
        pytest.param(
            b"--" + BOUNDARY.encode() + b"\nContent-Disposition: form-data\n\nx\n", id="bare LF"
        ),
        pytest.param(_form(("Content-Disposition form-data", b"1")), id="header without colon"),
    ],
)
def test_a_malformed_form_is_refused(body: bytes) -> None:
    with pytest.raises(BadRequest) as info:
        request_segments("/v1/files", "", FORM, body)
    assert info.value.code == "invalid_multipart"


def test_too_many_parts_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.wire import generic

    monkeypatch.setattr(generic, "MAX_SEGMENTS", 10)
    body = _form(*[('Content-Disposition: form-data; name="a"', b"1")] * 11)
    with pytest.raises(BadRequest) as info:
        request_segments("/v1/files", "", FORM, body)
    assert info.value.code == "invalid_payload"


def test_an_unreadable_archive_is_400_and_an_unsupported_one_415() -> None:
    bomb = gzip.compress(b"\0" * (archives.MAX_EXPANDED + 1))
    with pytest.raises(BadRequest) as info:
        request_segments("/v1/files", "", FORM, _form(_file("zeros.gz", bomb)))
    assert info.value.code == "invalid_payload"
    seven = b"7z\xbc\xaf\x27\x1c" + ENV
    with pytest.raises(UnsupportedMedia):
        request_segments("/v1/files", "", FORM, _form(_file("a.7z", seven)))


def test_archive_bounds_hold_across_the_parts_of_a_request() -> None:
    part = gzip.compress(b"x" * (archives.MAX_EXPANDED // 2 + 1))
    assert request_segments("/v1/files", "", FORM, _form(_file("a.gz", part)))
    with pytest.raises(BadRequest):
        request_segments("/v1/files", "", FORM, _form(_file("a.gz", part), _file("b.gz", part)))


def test_text_files_are_read_for_requests_in_them(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str, int | None]] = []

    def spy(text: str, path: str, index: int | None) -> list[Segment]:
        calls.append((text, path, index))
        return [Segment(f"{path}.line[0]", "user", "nested", Trust.TRUSTED, index)]

    monkeypatch.setattr(nested, "file_segments", spy)
    line = b'{"custom_id": "1", "method": "POST", "url": "/v1/chat/completions", "body": {}}\n'
    texts = _texts(
        _form(('Content-Disposition: form-data; name="purpose"', b"batch"), _file("b.jsonl", line))
    )
    assert ("batch", "form[0](purpose)", 0) in calls
    assert (line.decode(), "form[1](file)", 1) in calls
    assert texts["form[1](file).line[0]"] == "nested"
    raw, _ = request_segments(
        "/v1/uploads", "", "application/jsonl", line.decode().encode("utf-16")
    )
    assert (line.decode(), "body", None) in calls
    assert [s.text for s in raw if s.path == "body"] == [line.decode()]


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", ENV.decode().encode("utf-16")),
        ("text/plain", b"\x00" + ENV),
        (None, b"\xff" + ENV * 3),
        ("application/jsonl", gzip.compress(ENV)),
    ],
)
def test_raw_text_bodies_are_read_like_files(content_type: str | None, body: bytes) -> None:
    segments, payload = request_segments("/v1/files", "", content_type, body)
    assert payload is None
    assert any(TOKEN in s.text for s in segments)


def test_an_untyped_body_is_still_read_as_json_first() -> None:
    _, payload = request_segments("/v1/x", "", None, b'{"a": "b"}')
    assert payload == {"a": "b"}
    segments, payload = request_segments("/v1/x", "", None, b'{"a": NaN}')
    assert payload is None
    assert [s.text for s in segments if s.path == "body"] == ['{"a": NaN}']


def test_an_uploaded_file_whose_requests_cannot_be_read_is_400(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreadable(text: str, path: str, index: int | None) -> list[Segment]:
        raise PayloadError("batch file has more than 50000 lines")

    monkeypatch.setattr(nested, "file_segments", unreadable)
    with pytest.raises(BadRequest) as info:
        request_segments("/v1/files", "", FORM, _form(_file("b.jsonl", b"{}\n")))
    assert info.value.code == "invalid_payload"


def test_a_field_name_in_an_unknown_charset_is_read_as_sent() -> None:
    body = _form(("Content-Disposition: form-data; name*=ut\x00f-8''caf%C3%A9", b"x"))
    texts = _texts(body)
    assert texts["form[0].name"] == "caf\xc3\xa9"


def test_a_malformed_form_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    # The 400 says it; a client must not be able to fill the log.
    body = _form(("Content-Disposition form-data", b"1"))
    with caplog.at_level(logging.DEBUG), pytest.raises(BadRequest):
        request_segments("/v1/files", "", FORM, body)
    assert caplog.records == []
