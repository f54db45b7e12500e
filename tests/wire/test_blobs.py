"""Payload bytes to texts: encodings, archives and their bounds, base64 and data: URLs."""

from __future__ import annotations

import base64
import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
import zlib

import pytest

from gateway.wire import archives, blobs, charsets, content
from gateway.wire.archives import Unreadable, Unsupported
from tests.wire.test_media import ENV, TOKEN, jpeg, png, wav

TEXT = "Deploy with the token below.\n" + ENV.decode()


def _has_token(texts: list[str]) -> bool:
    return any(TOKEN in text for text in texts)


# -- text in any encoding --


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x00" + ENV * 3, id="leading NUL"),
        pytest.param(b"\xff" + ENV * 3, id="leading 0xFF"),
        pytest.param(b"\xc3\x28\x00" + ENV * 3, id="three bad bytes"),
        pytest.param(ENV * 3 + b"\x00", id="trailing NUL"),
        pytest.param(b"\xef\xbb\xbf" + ENV, id="UTF-8 BOM"),
        pytest.param(ENV.decode().encode("latin-1") + b"caf\xe9\n", id="Latin-1 accent"),
    ],
)
def test_text_with_a_few_bad_bytes_is_text(data: bytes) -> None:
    texts, _ = charsets.decode(data)
    assert _has_token(texts)
    assert len(texts) == 1


@pytest.mark.parametrize(
    "codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
)
@pytest.mark.parametrize("text", [TEXT, "Ключ для деплоя:\n" + ENV.decode()])
def test_utf16_and_utf32_with_and_without_a_bom(codec: str, text: str) -> None:
    texts, clean = charsets.decode(text.encode(codec))
    assert texts[0] == text
    assert not clean


def test_a_bom_that_lies_still_has_its_ascii_scanned() -> None:
    # FF FE before ASCII decodes as UTF-16 to CJK; the printable runs are read too.
    texts, _ = charsets.decode(b"\xff\xfe" + ENV * 2)
    assert _has_token(texts)


def test_a_utf16_guess_from_the_head_does_not_hide_the_rest() -> None:
    data = TEXT.encode("utf-16-le") * 300 + b"  " + ENV
    assert len(data) > 8192
    assert _has_token(charsets.decode(data)[0])


def test_binary_is_read_by_its_printable_runs() -> None:
    noise = bytes(range(128, 256)) * 4
    data = noise + b"\x01" + ENV + b"\x02" + noise + b"\x00short\x00" + noise
    [runs], clean = charsets.decode(data)
    assert runs == ENV.decode()
    assert not clean
    assert "short" not in runs  # under MIN_RUN: noise, not text


def test_binary_without_runs_has_no_text() -> None:
    assert charsets.decode(b"\x00\x01" * 200) == ([], False)
    assert charsets.decode(bytes(range(0x80, 0x100)) * 8) == ([], False)


# -- archives --


def _zip(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED, **kwargs: object) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for key, value in kwargs.items():
            setattr(archive, key, value)
    return out.getvalue()


def _tar(files: dict[str, bytes], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _v7(data: bytes) -> bytes:
    """A ustar archive's first header made a pre-POSIX one: no magic, checksum redone."""
    header = bytearray(data[:512])
    header[257:265] = bytes(8)
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header) + data[512:]


ARCHIVES = {
    "zip stored": _zip({".env": ENV}, zipfile.ZIP_STORED),
    "zip deflated": _zip({"conf/.env": ENV, "README": b"read me"}),
    "zip bzip2": _zip({".env": ENV}, zipfile.ZIP_BZIP2),
    "zip lzma": _zip({".env": ENV}, zipfile.ZIP_LZMA),
    "zip of a UTF-16 file": _zip({"notes.txt": TEXT.encode("utf-16")}),
    "tar": _tar({"app/.env": ENV}),
    "tar v7": _v7(_tar({".env": ENV}, tarfile.USTAR_FORMAT)),
    "gzip": gzip.compress(ENV),
    "gzip, two members": gzip.compress(b"first\n") + gzip.compress(ENV),
    "bzip2": bz2.compress(ENV),
    "xz": lzma.compress(ENV),
    "tar.gz": gzip.compress(_tar({".env": ENV})),
    "zip in tar.xz": lzma.compress(_tar({"inner.zip": _zip({".env": ENV})})),
    "zip after a stub": b"#!/bin/sh\nexit 0\n" + b"\0" * 64 + _zip({".env": ENV}),
    "zip comment": _zip({"a.txt": b"a"}, comment=ENV),
}


@pytest.mark.parametrize("name", sorted(ARCHIVES))
def test_archive_members_are_scanned(name: str) -> None:
    found = content.inspect(ARCHIVES[name])
    assert found.kind == "archive"
    assert _has_token(found.texts)


def test_member_names_are_scanned_and_real_media_in_them_is_skipped() -> None:
    found = content.inspect(_zip({"photo.png": png(), f"{TOKEN}.txt": b"x", "a.jpg": jpeg()}))
    assert found.texts[0] == f"photo.png\n{TOKEN}.txt\na.jpg"
    assert found.texts[1:] == ["x"]


def test_a_v7_tar_has_no_magic_and_is_read_by_its_checksum() -> None:
    data = ARCHIVES["tar v7"]
    assert data[257:262] != b"ustar"
    assert archives.kind(data) == "tar"


def test_bytes_after_a_gzip_stream_are_scanned() -> None:
    assert _has_token(content.texts(gzip.compress(b"hello") + b"\n" + ENV))


@pytest.mark.parametrize(
    "bomb",
    [
        pytest.param(gzip.compress(b"\0" * 4_000_000), id="gzip"),
        pytest.param(bz2.compress(b"\0" * 4_000_000), id="bzip2"),
        pytest.param(lzma.compress(b"\0" * 4_000_000), id="xz"),
        pytest.param(_zip({"zeros": b"\0" * 4_000_000}), id="zip"),
        pytest.param(gzip.compress(_tar({"zeros": b"\0" * 4_000_000})), id="tar.gz"),
    ],
)
def test_a_bomb_stops_at_the_expansion_bound(bomb: bytes) -> None:
    assert len(bomb) < 50_000
    with content.RequestBudget() as budget:
        budget.expanded = 1_000_000
        with pytest.raises(Unreadable, match="expand to more than"):
            content.texts(bomb)
        # No more than one byte past the bound was produced before the refusal.
        assert budget.expanded >= -1


def test_the_expansion_bound_is_shared_by_the_payloads_of_a_request() -> None:
    part = gzip.compress(b"x" * 600_000)
    with content.RequestBudget() as budget:
        budget.expanded = 1_000_000
        content.texts(part)
        with pytest.raises(Unreadable):
            content.texts(part)


def test_a_request_budget_ends_with_its_block_even_on_an_error() -> None:
    part = gzip.compress(b"x" * 600_000)
    with pytest.raises(Unreadable), content.RequestBudget() as budget:
        budget.expanded = 1_000
        content.texts(part)
    # Outside any request, a payload is held to the default bound again.
    assert any("x" * 1_000 in text for text in content.texts(part))
    with content.RequestBudget() as first:
        first.expanded = 0
    with content.RequestBudget() as second:
        assert second.expanded == archives.MAX_EXPANDED
        content.texts(part)


def test_the_default_expansion_bound() -> None:
    bomb = gzip.compress(b"\0" * (archives.MAX_EXPANDED + 1))
    with pytest.raises(Unreadable, match="expand to more than"):
        content.texts(bomb)


def test_too_many_members_are_refused() -> None:
    data = _zip({f"f{i}.txt": b"" for i in range(60)})
    with content.RequestBudget() as budget:
        budget.members = 60
        assert content.texts(data)[0].count("\n") == 59
    with content.RequestBudget() as budget:
        budget.members = 59
        with pytest.raises(Unreadable, match="members"):
            content.texts(data)


def test_a_forged_directory_is_counted_before_it_is_parsed() -> None:
    data = _zip({"a": b"a"})
    end = data.rindex(b"PK\x01\x02")
    record = data[end : data.rindex(b"PK\x05\x06")]
    # Directory records repeated past the bound, the end record left claiming one.
    forged = data[:end] + record * (archives.MAX_MEMBERS + 1) + data[data.rindex(b"PK\x05\x06") :]
    with pytest.raises(Unreadable, match="members"):
        content.texts(forged)


def test_overlapping_members_count_every_read() -> None:
    # Every directory entry points at the same local file: a quoted-overlap bomb.
    data = _zip({"big": b"\0" * 300_000})
    directory = data.rindex(b"PK\x01\x02")
    end = data.rindex(b"PK\x05\x06")
    record = data[directory:end]
    copies = 10
    tail = bytearray(data[end:])
    tail[8:10] = tail[10:12] = copies.to_bytes(2, "little")
    tail[12:16] = (len(record) * copies).to_bytes(4, "little")
    bomb = data[:directory] + record * copies + bytes(tail)
    with content.RequestBudget() as budget:
        budget.expanded = 2_000_000
        with pytest.raises(Unreadable, match="expand to more than"):
            content.texts(bomb)


@pytest.mark.parametrize("depth", [1, archives.MAX_NESTING])
def test_nesting_up_to_the_bound_is_read(depth: int) -> None:
    data = ENV
    for _ in range(depth):
        data = _zip({"inner": data})
    assert _has_token(content.texts(data))


def test_nesting_past_the_bound_is_refused() -> None:
    data = ENV
    for _ in range(archives.MAX_NESTING + 1):
        data = gzip.compress(data)
    with pytest.raises(Unreadable, match="nest deeper"):
        content.texts(data)


def _encrypted_zip() -> bytes:
    data = bytearray(_zip({".env": ENV}, zipfile.ZIP_STORED))
    # Set the encrypted flag in the local header and the directory record.
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.index(signature) + offset
        data[at] |= 1
    return bytes(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_encrypted_zip(), id="encrypted zip"),
        pytest.param(gzip.compress(ENV)[:-12], id="truncated gzip"),
        pytest.param(bz2.compress(ENV)[:-5], id="truncated bzip2"),
        pytest.param(lzma.compress(ENV)[:-9], id="truncated xz"),
        pytest.param(_zip({".env": ENV})[:40] + _zip({".env": ENV})[60:], id="corrupt zip"),
        pytest.param(b"\x1f\x8b\x08\x00" + b"\0" * 6 + ENV, id="gzip header, no stream"),
        pytest.param(_tar({".env": ENV * 100})[:1024], id="truncated tar"),
    ],
)
def test_an_archive_that_cannot_be_read_in_full_is_refused(data: bytes) -> None:
    with pytest.raises(Unreadable) as info:
        content.texts(data)
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize(
    "magic",
    [b"7z\xbc\xaf\x27\x1c", b"Rar!\x1a\x07\x01\x00", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18"],
)
def test_formats_the_standard_library_does_not_read_are_refused(magic: bytes) -> None:
    with pytest.raises(Unsupported):
        content.texts(magic + zlib.compress(ENV))


# -- base64 fields and data: URLs --


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_a_data_prefix_does_not_switch_the_scan_off() -> None:
    url = "data:,%FF deploy with GITHUB_TOKEN=" + TOKEN + "." * 520
    texts = blobs.data_url_texts(url)
    assert texts[0] == url  # as sent: a tool result is read as text
    assert TOKEN in texts[1]


@pytest.mark.parametrize(
    "url",
    [
        "data:text/plain;base64," + _b64(b"\x00" + ENV * 20),
        "data:application/octet-stream;base64," + _b64(b"\xff" + ENV * 20),
        "data:;base64," + _b64(TEXT.encode("utf-16")),
        "data:application/zip;base64," + _b64(_zip({".env": ENV})),
        "data:image/png;base64," + _b64(png()[:40] + ENV * 20),
        "data:audio/wav;base64," + _b64(wav()[:44] + ENV * 20),
    ],
)
def test_text_in_a_data_url_is_found_and_the_url_scanned_as_sent(url: str) -> None:
    texts = blobs.data_url_texts(url)
    assert texts[0] == url
    assert _has_token(texts[1:])


def test_text_after_a_real_image_in_a_data_url_is_found() -> None:
    assert _has_token(blobs.data_url_texts("data:image/png;base64," + _b64(png() + ENV)))


def test_a_real_image_data_url_is_skipped() -> None:
    assert blobs.data_url_texts("data:image/png;base64," + _b64(png())) == []
    assert blobs.data_url_texts("data:image/jpeg;base64," + _b64(jpeg())) == []


@pytest.mark.parametrize(
    "url",
    [
        # a real PNG, but not under a media type that says so, or not a data URL as written
        "data:image/jpeg;base64," + _b64(png()),
        "data:image/png;x;base64," + _b64(png()),
        "data:image/png;base64," + _b64(png()) + "!",
    ],
)
def test_a_real_image_under_a_wrong_or_malformed_label_is_scanned_as_sent(url: str) -> None:
    assert blobs.data_url_texts(url)[0] == url


@pytest.mark.parametrize(
    ("value", "declared"),
    [
        (_b64(b"\x00" + ENV * 20), None),
        (_b64(b"\xff\xfe" + ENV * 20), "text/plain"),
        (_b64(TEXT.encode("utf-16-be")), "notes.txt"),
        (_b64(png()[:33] + ENV * 20), "image/png"),
        (_b64(_zip({".env": ENV})), "application/zip"),
        (_b64(gzip.compress(ENV)), None),
        (base64.urlsafe_b64encode(b"\x00" + ENV * 20).decode().rstrip("="), None),
        (base64.encodebytes(b"\x00" + ENV * 20).decode(), None),
    ],
)
def test_text_in_a_base64_field_is_found(value: str, declared: str | None) -> None:
    assert _has_token(blobs.base64_texts(value, declared))


def test_a_real_image_in_a_base64_field_is_skipped() -> None:
    assert blobs.base64_texts(_b64(png()), "image/png") == []
    assert blobs.base64_texts(_b64(png()), None) == []


def test_what_is_not_base64_is_scanned_as_sent() -> None:
    value = f"token {TOKEN}"
    assert blobs.base64_texts(value, "image/png") == [value]


def test_a_short_token_where_base64_belongs_is_scanned_as_sent() -> None:
    # Valid base64 that decodes to garbage: the value itself is the text.
    assert blobs.base64_texts(TOKEN.replace("_", "x"), "image/png")[0] == TOKEN.replace("_", "x")


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ("YWJj", b"abc"),
        ("YWI", b"ab"),
        ("YWI=", b"ab"),
        ("YWJjZA", b"abcd"),
        ("YWJj\r\nZA==", b"abcd"),
        ("fn5-Pw", b"~~~?"),
        ("", b""),
    ],
)
def test_base64_accepted(text: str, decoded: bytes) -> None:
    source = blobs.base64_source(text)
    assert source is not None
    assert source.whole() == decoded
    assert source.size == len(decoded)
    assert b"".join(source.read(i, 1) for i in range(source.size)) == decoded


@pytest.mark.parametrize("text", ["YWJjZ", "YW=J", "YWJj=", "====", "YWJj!", "ключ"])
def test_base64_refused(text: str) -> None:
    assert blobs.base64_source(text) is None


def test_a_data_url_without_escapes_is_scanned_once() -> None:
    url = f"data:,token {TOKEN}"
    assert blobs.data_url_texts(url) == [url]
    assert blobs.data_url_texts("data:,a%20b") == ["data:,a%20b", "a b"]
