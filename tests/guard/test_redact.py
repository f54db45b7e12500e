"""Output redaction: whole texts, streams split anywhere, wrapped secrets, keys and failing closed.

Secret-looking values are assembled at run time from a seeded generator and split
prefixes, so this file holds no literal that a scanner would take for a credential.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.guard import floor
from gateway.guard.detectors import secrets, unwrap
from gateway.guard.findings import Finding
from gateway.guard.redact import (
    MIN_WINDOW,
    PEM_BOUND,
    StreamRedactor,
    marker,
    redact,
)

_RNG = random.Random(20240611)
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = B62 + "+/"
B64URL = B62 + "-_"
WINDOW = 256


def rand(n: int, alphabet: str = B62) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def jwt(claims: int = 1) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = {"sub": rand(8), "iat": 1700000000, **{f"c{i}": rand(24) for i in range(claims)}}
    return f"{header}.{b64url(json.dumps(body).encode())}.{b64url(_RNG.randbytes(32))}"


def pem_private_key(label: str = "RSA PRIVATE KEY", lines_of_key: int = 6) -> str:
    lines = [b64(_RNG.randbytes(48)) for _ in range(lines_of_key)]
    return "-----BEGIN " + label + "-----\n" + "\n".join(lines) + "\n-----END " + label + "-----"


def rsa_der() -> bytes:
    # Fixed numbers (a tiny, insecure key), so every run sees the same bytes.
    p, q, e = 1000000007, 998244353, 65537
    n, phi = p * q, (p - 1) * (q - 1)
    d = pow(e, -1, phi)
    numbers = rsa.RSAPrivateNumbers(
        p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p), rsa.RSAPublicNumbers(e, n)
    )
    key = numbers.private_key(unsafe_skip_rsa_key_validation=True)
    return key.private_bytes(ser.Encoding.DER, ser.PrivateFormat.PKCS8, ser.NoEncryption())


PW = "Tr0" + "ub4dor&3x!" + rand(4)
TOKEN_BODY = rand(40)
GITHUB = "gh" + "p_" + rand(36)
OPENAI = "sk-" + "proj-" + rand(64, B64URL) + "A"

# (kind, text before, secret value, text after): the marker must replace the value.
SAMPLES = [
    ("private_key", "key:\n", pem_private_key(), "\n"),
    ("private_key", "", pem_private_key("EC PRIVATE KEY"), ""),
    ("private_key", "", pem_private_key("OPENSSH PRIVATE KEY", 20), "\n"),
    ("private_key", '"', pem_private_key("PRIVATE KEY"), '"'),
    ("openai_api_key", "OPENAI_API_KEY=", OPENAI, "\n"),
    ("openai_api_key", "use ", "sk-" + "svcacct-" + rand(48, B64URL) + "z", " now"),
    ("openai_api_key", "legacy ", "sk-" + rand(20) + "T3Blbk" + "FJ" + rand(20), ""),
    ("anthropic_api_key", "x-api-key: ", "sk-" + "ant-api03-" + rand(93, B64URL) + "AA", ""),
    ("github_token", "token ", GITHUB, ""),
    ("github_token", "GH=", "github" + "_pat_" + "11A" + rand(19) + "_" + rand(59), ""),
    ("gitlab_token", "", "gl" + "pat-" + rand(20, B64URL[:-2]) + "-" + rand(3), ""),
    (
        "aws_access_key",
        "aws_access_key_id = ",
        "AK" + "IA" + rand(16, string.ascii_uppercase + "234567"),
        "",
    ),
    ("aws_secret_access_key", "aws_secret_access_key = ", rand(39, B64) + "Q", ""),
    (
        "slack_token",
        "",
        "xo" + "xb-" + rand(12, "123456789") + "-" + rand(13, "123456789") + "-" + rand(24),
        "",
    ),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/",
        "T0" + rand(8, "ABCDEFGH123") + "/B0" + rand(8, "ABCDEFGH123") + "/" + rand(24),
        "",
    ),
    ("stripe_key", "", "sk" + "_live_" + rand(24), ""),
    ("jwt", "Authorization: Bearer ", jwt(), ""),
    # Longer than the window: held from its start while it grows.
    ("jwt", "Authorization: Bearer ", jwt(claims=12), ""),
    ("google_api_key", 'apiKey: "', "AI" + "zaSy" + rand(33, B64URL), '"'),
    ("npm_token", "//registry.npmjs.org/:_authToken=", "np" + "m_" + rand(36), ""),
    ("huggingface_token", "HF_TOKEN=", "h" + "f_" + rand(34, string.ascii_letters), ""),
    ("sendgrid_api_key", "", "S" + "G." + rand(22) + "." + rand(43), ""),
    ("db_connection_string", "postgres://app:", PW, "@db.internal:5432/app"),
    ("url_credentials", "git clone https://deploy:", PW, "@git.example.org/repo.git"),
    ("basic_auth", "curl -u deploy:", PW, " https://api.example.org/v1"),
    ("bearer_token", '-H "Authorization: Bearer ', rand(40), '"'),
    ("password_assignment", 'password = "', PW, '"'),
    ("password_assignment", "db:\n  password: ", PW, "\n"),
    ("password_assignment", "DB_PASSWORD=", PW, "\n"),
    ("password_assignment", '{"password": "', PW, '"}'),
    ("password_assignment", "Sure, my password is ", PW, ". Thanks!"),
    ("secret_assignment", "The access token is ", TOKEN_BODY, " if you need it."),
    ("secret_assignment", "export SERVICE_TOKEN=", TOKEN_BODY, "\n"),
    ("high_entropy_token", "upload_key: ", rand(48), "\n"),
]


def wrap(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


_DER = b64(rsa_der())
# (kind, text before, the wrapped secret, text after, the secret it wraps)
WRAPPED = [
    ("github_token", "blob ", b64(("token " + GITHUB).encode()), " end", GITHUB),
    ("openai_api_key", "hex: ", ("OPENAI_API_KEY=" + OPENAI).encode().hex(), " ok", OPENAI),
    # The smallest delimited run holding a wrapping goes: here the whole URL.
    (
        "github_token",
        "url ",
        "https://x.example/?q=" + "".join(f"%{b:02X}" for b in GITHUB.encode()) + "&z=1",
        " done",
        GITHUB,
    ),
    ("github_token", "token ", "\u200b".join(GITHUB), " done", GITHUB),
    (
        "github_token",
        "token ",
        "".join(chr(ord(c) + 0xFEE0) for c in GITHUB),
        " done",
        GITHUB,
    ),
    ("github_token", 'print("', "".join(f"\\x{b:02x}" for b in GITHUB.encode()), '")', GITHUB),
    ("github_token", "bytes: ", ", ".join(f"0x{b:02x}" for b in GITHUB.encode()), " end", GITHUB),
    (
        "password_assignment",
        "config blob: ",
        b64(("password=" + PW).encode()),
        " end of it",
        PW,
    ),
    (
        "openai_api_key",
        "blob:\n",
        wrap(b64(("text before the key " + OPENAI + " and after it").encode()), 40),
        "\nafter",
        OPENAI,
    ),
    (
        "private_key",
        "key material:\n",
        wrap(_DER, 64),
        "\nthanks",
        _DER,
    ),
]

_VOCABULARY = (
    "the a of to and in is it that for on with as was we you this be are at by from "
    "deploy review build release notes plan weather report service request answer "
    "token-free sentence, (brackets) and: colons; semicolons 42 1.5 3/4 x=y path/to/file"
)
WORDS = tuple(_VOCABULARY.split())


def prose(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words) + ".\n"


def pieces(secret: str) -> Iterator[str]:
    """Every 8-character piece of a secret: none may be in a redacted text."""
    for i in range(max(1, len(secret) - 7)):
        yield secret[i : i + 8]


def leaked(secret: str, out: str) -> list[str]:
    return [p for p in pieces(secret) if p in out]


def split(text: str, rng: random.Random, chunks: int) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), min(chunks - 1, len(text) - 1)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def stream(chunks: list[str], window: int = WINDOW) -> tuple[str, list[int]]:
    """The concatenated output of a redactor fed ``chunks``, and what it held after each feed."""
    redactor = StreamRedactor(window)
    out: list[str] = []
    held: list[int] = []
    for chunk in chunks:
        out.append(redactor.feed(chunk))
        held.append(redactor.held)
    out.append(redactor.flush())
    assert redactor.held == 0
    return "".join(out), held


_PROSE_RNG = random.Random(7)
BEFORE = prose(_PROSE_RNG, 300)
AFTER = " " + prose(_PROSE_RNG, 300)
TEXTS = [BEFORE + before + secret + after + AFTER for _, before, secret, after in SAMPLES]


# ---------------------------------------------------------------------------
# redact
# ---------------------------------------------------------------------------

CLEAN = [
    "",
    "short",
    BEFORE + AFTER,
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 and uuid 123e4567-e89b-12d3-a456-426614174000",
    "def main(token: str) -> None:\n    password = os.environ['DB_PASSWORD']\n",
    "see https://example.org/docs?page=2&lang=en and /usr/local/lib/python3.11",
    "base64 of prose: " + b64(b"just some ordinary words, nothing to see here"),
    "Привет, мир! Это обычный текст. 你好，世界。ＡＢＣ full width letters",
    "placeholders: password=<your-password> api_key=${API_KEY} token: xxxxxxxx",
]


@pytest.mark.parametrize("text", CLEAN)
def test_clean_text_is_returned_unchanged(text: str) -> None:
    assert floor.find(text) == []
    assert redact(text) is text


@pytest.mark.parametrize(("kind", "before", "secret", "after"), SAMPLES)
def test_each_kind_is_replaced_by_its_marker(
    kind: str, before: str, secret: str, after: str
) -> None:
    out = redact(BEFORE + before + secret + after + AFTER)
    assert leaked(secret, out) == []
    assert marker(kind) in out
    assert out.startswith(BEFORE + before) and out.endswith(after + AFTER)
    assert floor.find(out) == []


@pytest.mark.parametrize(("kind", "before", "wrapped", "after", "secret"), WRAPPED)
def test_wrapped_secrets_are_replaced_with_their_wrapping(
    kind: str, before: str, wrapped: str, after: str, secret: str
) -> None:
    text = BEFORE + before + wrapped + after + AFTER
    assert secret not in text
    out = redact(text)
    assert out == BEFORE + before + marker(kind) + after + AFTER
    assert leaked(secret, out) == []


def test_several_wrapped_secrets_each_get_a_marker() -> None:
    text = (
        "first "
        + b64(GITHUB.encode())
        + " then some words in between, "
        + OPENAI.encode().hex()
        + " and the end"
    )
    assert redact(text) == (
        f"first {marker('github_token')} then some words in between, "
        f"{marker('openai_api_key')} and the end"
    )


def test_a_value_whose_name_alone_is_wrapped_is_replaced_where_it_stands() -> None:
    text = "creds: " + "".join(f"&#{ord(c)};" for c in "password") + "=" + PW + "\nnext"
    assert [v for _, v in floor.find(text)] == [PW]
    out = redact(text)
    assert leaked(PW, out) == []
    assert out.endswith(marker("password_assignment") + "\nnext")


def test_every_occurrence_is_replaced() -> None:
    text = f"one {GITHUB} two {GITHUB} three"
    gh = marker("github_token")
    assert redact(text) == f"one {gh} two {gh} three"


def test_overlapping_findings_become_one_marker_named_after_the_longest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "aaaa bbbbbbbbbbbb cccc dddd eeee"
    real = secrets.scan

    def scan(t: str) -> list[Finding]:
        if t != text:
            return real(t)
        return [
            Finding("short_one", 5, 12),
            Finding("long_one", 9, 22),
            Finding("touching", 22, 27),
        ]

    monkeypatch.setattr(secrets, "scan", scan)
    assert redact(text) == "aaaa [REDACTED:long_one] eeee"


def test_a_text_wrapped_beyond_the_bounds_fails_closed() -> None:
    deep = GITHUB.encode()
    for _ in range(unwrap.MAX_DEPTH + 1):
        deep = base64.b64encode(deep)
    text = "payload " + deep.decode() + " end"
    with pytest.raises(unwrap.UnwrapLimit):
        floor.find(text)
    assert redact(text) == marker("unchecked")


def test_any_error_of_the_floor_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    def scan(text: str) -> list[Finding]:
        raise RuntimeError("broken detector")

    monkeypatch.setattr(secrets, "scan", scan)
    assert redact("ordinary words, nothing more") == marker("unchecked")
    out, _ = stream(split(BEFORE + GITHUB + AFTER, random.Random(1), 9))
    assert out == marker("unchecked")


# ---------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("sample", "text"), list(zip(SAMPLES, TEXTS, strict=True)))
def test_a_stream_split_anywhere_redacts_as_the_whole_text_does(
    sample: tuple[str, str, str, str], text: str
) -> None:
    kind, _, secret, _ = sample
    whole = redact(text)
    assert marker(kind) in whole
    rng = random.Random(hash(secret) & 0xFFFF)
    for chunks in [list(text), *(split(text, rng, rng.randint(2, 20)) for _ in range(8))]:
        out, held = stream(chunks)
        assert leaked(secret, out) == []
        assert out == whole
        received = 0
        for chunk, kept in zip(chunks, held, strict=True):
            received += len(chunk)
            if received <= len(BEFORE):  # only prose so far
                assert kept <= WINDOW


@given(
    sample=st.sampled_from(range(len(SAMPLES))),
    seed=st.integers(0, 2**32 - 1),
    chunks=st.integers(2, 20),
)
@settings(max_examples=150, database=None, derandomize=True, deadline=None)
def test_property_any_split_gives_the_whole_text_result(
    sample: int, seed: int, chunks: int
) -> None:
    text = TEXTS[sample]
    out, _ = stream(split(text, random.Random(seed), chunks))
    assert leaked(SAMPLES[sample][2], out) == []
    assert out == redact(text)


@pytest.mark.parametrize(("kind", "before", "wrapped", "after", "secret"), WRAPPED)
def test_wrapped_secrets_in_a_stream(
    kind: str, before: str, wrapped: str, after: str, secret: str
) -> None:
    text = BEFORE + before + wrapped + after + AFTER
    whole = redact(text)
    rng = random.Random(len(wrapped))
    for chunks in [list(text), *(split(text, rng, rng.randint(2, 20)) for _ in range(6))]:
        out, _ = stream(chunks)
        assert leaked(secret, out) == []
        assert out == whole


@given(
    text=st.lists(
        st.sampled_from([*WORDS, " ", " ", "\n", ", ", "é", "日本", "🎉"]), max_size=80
    ).map(lambda words: " ".join(words) * 3),
    seed=st.integers(0, 2**32 - 1),
    chunks=st.integers(1, 40),
    window=st.sampled_from([MIN_WINDOW, 100, WINDOW]),
)
@settings(max_examples=100, database=None, derandomize=True, deadline=None)
def test_property_clean_text_passes_unchanged_and_is_held_at_most_a_window(
    text: str, seed: int, chunks: int, window: int
) -> None:
    if floor.find(text):
        return  # word salad can spell a secret: not the property under test
    pieces = split(text, random.Random(seed), chunks) if len(text) > 1 else [text]
    out, held = stream(pieces, window)
    assert out == text == redact(text)
    assert max(held, default=0) <= window


def test_clean_output_is_a_prefix_delayed_by_exactly_the_window() -> None:
    text = BEFORE * 4
    redactor = StreamRedactor(100)
    out = ""
    for i, ch in enumerate(text, 1):
        out += redactor.feed(ch)
        assert out == text[: max(0, i - 100)]
        assert redactor.held == min(i, 100)
    assert out + redactor.flush() == text


def test_a_name_already_sent_still_names_the_value_after_it() -> None:
    window = MIN_WINDOW
    head = BEFORE + "DB_PASSWORD="
    redactor = StreamRedactor(window)
    out = "".join(redactor.feed(c) for c in head)
    # Feed the value one character at a time until the name has gone out.
    value = iter(PW + "\n" + AFTER)
    while "DB_PASSWORD=" not in out:
        out += redactor.feed(next(value))
    out += "".join(redactor.feed(c) for c in value) + redactor.flush()
    assert leaked(PW, out) == []
    assert out == redact(head + PW + "\n" + AFTER)


def test_a_private_key_is_held_from_its_header_to_its_end_line() -> None:
    key = pem_private_key(lines_of_key=20)
    assert len(key) > 4 * WINDOW
    redactor = StreamRedactor()
    out = redactor.feed(BEFORE)
    out += redactor.feed(AFTER)  # enough to pass all of BEFORE on
    out += redactor.feed(key[:-20])
    assert leaked(key, out) == []
    assert redactor.held >= len(key) - 20
    out += redactor.feed(key[-20:] + "\n" + AFTER)
    assert marker("private_key") in out  # passed on as soon as it closed
    assert redactor.held == WINDOW
    out += redactor.flush()
    assert out == BEFORE + AFTER + marker("private_key") + "\n" + AFTER


def test_a_private_key_without_end_line_is_cut_at_the_bound() -> None:
    lines = [b64(_RNG.randbytes(48)) for _ in range(PEM_BOUND // 64 + 40)]
    header, footer = "-----BEGIN RSA PRIVATE KEY-----\n", "\n-----END RSA PRIVATE KEY-----"
    text = BEFORE + header + "\n".join(lines) + footer + "\n" + AFTER
    out, held = stream(split(text, random.Random(3), 400))
    assert max(held) <= PEM_BOUND + WINDOW + len(text) // 400 * 3
    for line in lines:
        assert line[:16] not in out
    assert out == BEFORE + marker("private_key") + "\n" + AFTER


def test_holding_a_private_key_costs_no_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[int] = []
    real = secrets.scan

    def scan(text: str) -> list[Finding]:
        scanned.append(len(text))
        return real(text)

    monkeypatch.setattr(secrets, "scan", scan)
    key = pem_private_key(lines_of_key=60)
    redactor = StreamRedactor()
    redactor.feed(BEFORE + key[:100])
    before = len(scanned)
    for i in range(100, len(key) - 40, 20):
        assert redactor.feed(key[i : i + 20]) == ""
    assert len(scanned) == before


def test_scanning_is_bounded_per_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each delta scans at most the context and the held text: linear in the stream's length."""
    scanned: list[int] = []
    real = secrets.scan

    def scan(text: str) -> list[Finding]:
        scanned.append(len(text))
        return real(text)

    monkeypatch.setattr(secrets, "scan", scan)
    text = (BEFORE + AFTER) * 40
    redactor = StreamRedactor()
    deltas = 0
    for i in range(0, len(text), 20):
        redactor.feed(text[i : i + 20])
        deltas += 1
    redactor.flush()
    assert len(scanned) <= deltas + 1
    assert max(scanned) <= 2 * WINDOW + 20


def test_the_floor_failing_in_a_stream_passes_on_nothing_unchecked() -> None:
    deep = GITHUB.encode()
    for _ in range(unwrap.MAX_DEPTH + 1):
        deep = base64.b64encode(deep)
    text = BEFORE + "payload " + deep.decode() + " end " + AFTER * 3
    out, _ = stream(split(text, random.Random(5), 15))
    assert marker("unchecked") in out
    assert deep.decode()[:16] not in out
    assert out.endswith(AFTER)  # once the wrapping is out of the window, text flows again


def test_window_bounds_and_reuse() -> None:
    with pytest.raises(ValueError, match="window"):
        StreamRedactor(MIN_WINDOW - 1)
    redactor = StreamRedactor()
    assert redactor.feed("") == "" and redactor.flush() == ""
    first = redactor.feed(BEFORE + GITHUB + " ") + redactor.flush()
    second = redactor.feed(BEFORE) + redactor.flush()
    assert first == BEFORE + marker("github_token") + " "
    assert second == BEFORE


@pytest.mark.parametrize("label", ["ML-DSA-65", "ML-KEM-768", "SLH-DSA-SHA2-128S"])
def test_post_quantum_key_blocks_go_whole(label: str) -> None:
    body = "\n".join(["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"] * 6)
    key = f"-----BEGIN {label} PRIVATE KEY-----\n{body}\n-----END {label} PRIVATE KEY-----"
    text = f"here:\n{key}\nbye"
    assert redact(text) == "here:\n[REDACTED:private_key]\nbye"
    stream = StreamRedactor()
    out = "".join(stream.feed(text[i : i + 7]) for i in range(0, len(text), 7)) + stream.flush()
    assert out == "here:\n[REDACTED:private_key]\nbye"
