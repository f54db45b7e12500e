"""Request bodies, sans-IO: content decoding and strict JSON parsing."""

from __future__ import annotations

import gzip
import zlib

import pytest

from gateway.errors import BadRequest, TooLarge, UnsupportedMedia
from gateway.wire.body import decode_content, parse_json, request_segments

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
