"""Wrapped secrets: each wrapping and normalisation, private keys without a header, and bounds.

Secret-looking values are assembled at run time from a seeded generator and split
prefixes, so this file holds no literal that a scanner would take for a credential.
Keys are built by cryptography from fixed numbers, so every run sees the same bytes.
"""

from __future__ import annotations

import base64
import html
import json
import random
import string
import unicodedata
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from gateway.guard.detectors import secrets, unwrap
from gateway.guard.findings import Finding

_RNG = random.Random(20240611)
B62 = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = B62) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


GITHUB = "gh" + "p_" + rand(36)
ENV = f"DEBUG=1\nGITHUB_TOKEN={GITHUB}\nLOG_LEVEL=info\n"


def find(text: str) -> list[tuple[str, str]]:
    return unwrap.find(text, secrets.scan)


def b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def b64url(data: str) -> str:
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def pct(data: str) -> str:
    return "".join(f"%{b:02X}" for b in data.encode())


def wrap(data: str, width: int = 76, sep: str = "\n") -> str:
    return sep.join(data[i : i + width] for i in range(0, len(data), width))


# ---------------------------------------------------------------------------
# Encodings: the value reported is the decoded secret
# ---------------------------------------------------------------------------

WRAPPED: dict[str, str] = {
    "base64": f"use {b64(GITHUB)} for pushes",
    "base64 without padding": b64(GITHUB + "\n").rstrip("="),
    "base64 URL-safe": f"see {b64url(GITHUB)}",
    "base64 of an env file": f"cat .env | base64\n{b64(ENV)}\n",
    "base64 wrapped at 76": wrap(b64(ENV * 4)),
    "base64 wrapped with CRLF": wrap(b64(ENV * 3), 64, "\r\n"),
    "base64 lines in a JSON string": json.dumps({"blob": wrap(b64(ENV * 3), 64)}),
    "base64 lines as quoted pieces": "\n".join(
        f'  "{line}" +' for line in wrap(b64(ENV * 3), 60).split("\n")
    ),
    "percent, every character": f"q={pct(GITHUB)}",
    "percent, lowercase": pct(GITHUB).lower(),
    "percent, some characters": GITHUB[:4] + pct(GITHUB[4:9]) + GITHUB[9:],
    "entities, decimal": "".join(f"&#{ord(c)};" for c in GITHUB),
    "entities, hex": "".join(f"&#x{ord(c):x};" for c in GITHUB),
    "entities, named": html.escape(f'<a title="{GITHUB}">x</a>').replace("_", "&lowbar;"),
    "hex": f"payload {GITHUB.encode().hex()}",
    "hex, uppercase": GITHUB.encode().hex().upper(),
    "hex, 0x prefix": "0x" + GITHUB.encode().hex(),
    "hex wrapped at 60 (xxd -p)": wrap(ENV.encode().hex(), 60),
    "backslash x": 'k = "' + "".join(f"\\x{b:02x}" for b in GITHUB.encode()) + '"',
    "backslash u": "".join(f"\\u{ord(c):04x}" for c in GITHUB),
    "backslash u braces": "".join(f"\\u{{{ord(c):x}}}" for c in GITHUB),
    "0x list": "{" + ", ".join(f"0x{b:02x}" for b in GITHUB.encode()) + "}",
    "base64 of UTF-16": b64(GITHUB.encode("utf-16-le")),
    "base64 of percent": b64(pct(GITHUB)),
    "percent of base64 of percent": pct(b64(pct(GITHUB))),
    "base64 of base64 of base64": b64(b64(b64(ENV))),
    "entities of base64": "".join(f"&#{ord(c)};" for c in b64(GITHUB)),
    "hex of base64": b64(GITHUB).encode().hex(),
    "base64 with a stray byte after it": b64(GITHUB.encode() + b"\xff"),
}


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_wrapped_token_is_found_with_its_value(name: str) -> None:
    assert secrets.scan(WRAPPED[name]) == [] or name.startswith("percent, some")
    assert ("github_token", GITHUB) in find(WRAPPED[name])


def test_plain_text_findings_come_first_and_once() -> None:
    text = f"{GITHUB} and again {b64(GITHUB)}"
    assert find(text) == [("github_token", GITHUB)]


def test_a_pem_key_inside_base64_is_found() -> None:
    pem = PKCS8_RSA_PEM
    found = find(f"key: {b64(pem)}")
    assert [kind for kind, _ in found] == ["private_key"]


def test_kubeconfig_in_base64_with_its_key_in_base64() -> None:
    kubeconfig = (
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n"
        f"    client-key-data: {b64(PKCS8_RSA_PEM)}\n"
    )
    walk = unwrap.walk(wrap(b64(kubeconfig)), secrets.scan)
    assert "private_key" in {kind for kind, _ in walk.found}
    assert walk.depth == 2


# ---------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------

INVISIBLE = [
    "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\u2061", "\u2062",
    "\u2063", "\u2064", "\ufeff", "\u180e", "\u034f", "\u00ad",
]  # fmt: skip


@pytest.mark.parametrize("char", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_invisible_characters_inside_a_token(char: str) -> None:
    hidden = char.join(GITHUB)
    assert secrets.scan(hidden) == []
    assert ("github_token", GITHUB) in find(f"token: {hidden}")


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


CYRILLIC = str.maketrans("aceopxyABCEHKMOPTX", "асеорхуАВСЕНКМОРТХ")
GREEK = str.maketrans("ABEHIKMNOPTXYZo", "ΑΒΕΗΙΚΜΝΟΡΤΧΥΖο")

LOOKALIKES: dict[str, Callable[[str], str]] = {
    "fullwidth": fullwidth,
    "Cyrillic": lambda t: t.translate(CYRILLIC),
    "Greek": lambda t: t.translate(GREEK),
    "mathematical bold": lambda t: "".join(
        chr(0x1D400 + ord(c) - 65) if "A" <= c <= "Z" else c for c in t
    ),
    "combining marks": lambda t: "".join(c + "\u0301" if c.isalpha() else c for c in t),
    "Arabic-Indic digits": lambda t: "".join(chr(0x660 + int(c)) if c.isdigit() else c for c in t),
    "dash look-alikes": lambda t: t.replace("-", "\u2011"),
}
AWS = "AK" + "IA" + rand(16, string.ascii_uppercase + "234567")
OPENAI = "sk-" + "proj-" + rand(64, B62 + "-_") + "A"


@pytest.mark.parametrize("how", sorted(LOOKALIKES))
def test_lookalike_letters_and_digits(how: str) -> None:
    spell = LOOKALIKES[how]
    for secret in (GITHUB, AWS, OPENAI):
        text = f"here: {spell(secret)} ok"
        if text == f"here: {secret} ok":
            continue  # this spelling leaves the secret as it is
        kinds = {value for _, value in find(text)}
        assert secret in kinds, (how, secret[:6])


def test_a_no_break_space_between_a_name_and_a_value() -> None:
    pw = "Tr0" + "ub4dor&3x!" + rand(4)
    assert find(f"password:\u00a0{pw}")


def test_normalise() -> None:
    assert unwrap.normalise("ｇｈｐ＿") == "ghp_"
    assert unwrap.normalise("g\u200bh\u00adp\u2060_") == "ghp_"
    assert unwrap.normalise("АКІА") == "AKIA"  # Cyrillic A, Ka, Byelorussian I, A
    assert unwrap.normalise("Ιota") == "Iota"  # Greek capital iota reads as I, not l
    assert unwrap.normalise("c\u0301afe\u0301") == "cafe"
    assert unwrap.normalise("\u0663\u0661") == "31"
    assert unwrap.normalise("sk\u2011proj") == "sk-proj"


def test_fold_table_maps_non_ascii_to_ascii() -> None:
    for target, sources in unwrap.FOLD.items():
        assert target.isascii() and len(target) == 1
        for ch in sources:
            assert not ch.isascii()
            assert not unicodedata.normalize("NFKC", ch).isascii()


def test_prose_in_other_scripts_is_left_alone() -> None:
    texts = [
        "Привет! Это обычный текст: 2024 год, цена 100 руб., ключ к успеху — труд.",
        "Καλημέρα κόσμε, αυτό είναι ένα απλό κείμενο για τον κωδικό 42.",
        "Le café est très bon, à côté de la forêt — n’est-ce pas ? Mot de passe oublié.",
        "这是一个普通的句子，使用Python和JSON（数据）。",
        "Done ✅ — shipped the “release” 🎉 don’t worry…",
    ]
    for text in texts:
        assert find(text) == [], text


# ---------------------------------------------------------------------------
# Private keys without a header
# ---------------------------------------------------------------------------


def _prime(rng: random.Random, bits: int) -> int:
    while True:
        n = rng.getrandbits(bits) | (1 << (bits - 1)) | 1
        if all(pow(a, n - 1, n) == 1 for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)):
            return n


def _rsa_key() -> rsa.RSAPrivateKey:
    rng = random.Random(7)
    e = 65537
    while True:
        p, q = _prime(rng, 512), _prime(rng, 512)
        phi = (p - 1) * (q - 1)
        if p != q and phi % e:
            break
    d = pow(e, -1, phi)
    public = rsa.RSAPublicNumbers(e, p * q)
    numbers = rsa.RSAPrivateNumbers(p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p), public)
    return numbers.private_key(unsafe_skip_rsa_key_validation=True)


RSA_KEY = _rsa_key()
EC_KEY = ec.derive_private_key(0x1F2E3D4C5B6A79881726354453627180ABCDEF0123456789, ec.SECP256R1())
ED_KEY = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PKCS8, NOENC = ser.PrivateFormat.PKCS8, ser.NoEncryption()
PKCS8_RSA_PEM = RSA_KEY.private_bytes(ser.Encoding.PEM, PKCS8, NOENC).decode()

KEYS: dict[str, bytes] = {
    "PKCS#8 RSA": RSA_KEY.private_bytes(ser.Encoding.DER, PKCS8, NOENC),
    "PKCS#1 RSA": RSA_KEY.private_bytes(
        ser.Encoding.DER, ser.PrivateFormat.TraditionalOpenSSL, NOENC
    ),
    "SEC1 EC": EC_KEY.private_bytes(ser.Encoding.DER, ser.PrivateFormat.TraditionalOpenSSL, NOENC),
    "PKCS#8 EC": EC_KEY.private_bytes(ser.Encoding.DER, PKCS8, NOENC),
    "PKCS#8 Ed25519": ED_KEY.private_bytes(ser.Encoding.DER, PKCS8, NOENC),
    "encrypted PKCS#8": EC_KEY.private_bytes(
        ser.Encoding.DER, PKCS8, ser.BestAvailableEncryption(b"pass" + b"phrase")
    ),
    "OpenSSH": base64.b64decode(
        "".join(
            ED_KEY.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.OpenSSH, NOENC)
            .decode()
            .splitlines()[1:-1]
        )
    ),
}

NOT_KEYS: dict[str, bytes] = {
    "SubjectPublicKeyInfo": RSA_KEY.public_key().public_bytes(
        ser.Encoding.DER, ser.PublicFormat.SubjectPublicKeyInfo
    ),
    "PKCS#1 public key": RSA_KEY.public_key().public_bytes(
        ser.Encoding.DER, ser.PublicFormat.PKCS1
    ),
    "EC public key": EC_KEY.public_key().public_bytes(
        ser.Encoding.DER, ser.PublicFormat.SubjectPublicKeyInfo
    ),
    "random bytes": random.Random(3).randbytes(1200),
    "random bytes led by a SEQUENCE": b"\x30\x82\x04\xa4" + random.Random(4).randbytes(1188),
    # {sha256 OID, digest}: the shape of an encrypted key, without a PBE algorithm.
    "DigestInfo": bytes.fromhex("3031300d060960864801650304020105000420") + bytes(32),
}


def _certificate() -> bytes:
    import datetime

    from cryptography import x509
    from cryptography.x509.oid import NameOID

    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "reefgate test")])
    when = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(ED_KEY.public_key())
        .serial_number(1)
        .not_valid_before(when)
        .not_valid_after(when + datetime.timedelta(days=365))
        .sign(ED_KEY, None)
    )
    return cert.public_bytes(ser.Encoding.DER)


NOT_KEYS["certificate"] = _certificate()


@pytest.mark.parametrize("name", sorted(KEYS))
def test_private_key_der_is_a_key(name: str) -> None:
    assert unwrap.is_private_key(KEYS[name])


@pytest.mark.parametrize("name", sorted(NOT_KEYS))
def test_other_der_is_not_a_key(name: str) -> None:
    assert not unwrap.is_private_key(NOT_KEYS[name])


def test_a_cut_off_key_is_still_a_key() -> None:
    assert unwrap.is_private_key(KEYS["PKCS#8 RSA"][:300])
    assert unwrap.is_private_key(KEYS["PKCS#1 RSA"][:300])


def test_other_runs_of_integers_are_not_keys() -> None:
    ints = [b"\x02\x01\x00", b"\x02\x81\x80\x7f" + bytes(127), *[b"\x02\x01\x03"] * 3]
    body = b"".join(ints)  # five integers: neither RSA (nine) nor DSA (six)
    assert not unwrap.is_private_key(b"\x30\x81" + bytes([len(body)]) + body)
    signature = b"\x30\x44\x02\x20" + bytes(range(1, 33)) + b"\x02\x20" + bytes(range(2, 34))
    assert not unwrap.is_private_key(signature)


def _bodies(der: bytes) -> dict[str, str]:
    body = b64(der)
    lines = wrap(body, 64)
    return {
        "64-column lines": lines,
        "lines and the END line": f"{lines}\n-----END PRIVATE KEY-----\n",
        "comment prefix": "\n".join(f"# {line}" for line in lines.split("\n")),
        "slash comment prefix": "\n".join(f"// {line}" for line in lines.split("\n")),
        "indented YAML block": "key: |\n" + "\n".join(f"  {ln}" for ln in lines.split("\n")),
        "one long string": f'echo "{body}" | base64 -d > id',
        "escaped line breaks": json.dumps(lines),
    }


@pytest.mark.parametrize("key", sorted(KEYS))
@pytest.mark.parametrize("form", sorted(_bodies(b"")))
def test_bare_key_body(key: str, form: str) -> None:
    text = _bodies(KEYS[key])[form]
    assert ("private_key", b64(KEYS[key])) in find(text)


@pytest.mark.parametrize("name", sorted(NOT_KEYS))
def test_bare_body_of_other_der_passes(name: str) -> None:
    assert find(wrap(b64(NOT_KEYS[name]), 64)) == []


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_window_that_starts_inside_a_base64_run(cut: int) -> None:
    # The pipeline scans a large text in overlapping windows; one may start anywhere.
    text = wrap(b64(("x" * 90 + "\n" + ENV) * 3))
    assert ("github_token", GITHUB) in find(text[cut + 200 :])


def test_a_pem_key_is_reported_once() -> None:
    assert [kind for kind, _ in find(PKCS8_RSA_PEM)] == ["private_key"]


# ---------------------------------------------------------------------------
# What is not decoded, and bounds
# ---------------------------------------------------------------------------


def test_binary_is_not_scanned_as_text() -> None:
    # An image with a token in its metadata: binary, so no view is made of it.
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8 + GITHUB.encode() + bytes(range(256))
    walk = unwrap.walk(f"data:image/png;base64,{b64(png)}", secrets.scan)
    assert walk.views == [] and walk.found == []


def test_identifiers_hashes_and_words_are_not_decoded() -> None:
    text = (
        "getUserAccountSettingsById ConnectionResetError token_count_page_tail "
        "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 internationalization "
        "c73cfbf5-4954-4617-aeac-1abc4975313d /usr/local/lib/python3.11/site-packages"
    )
    walk = unwrap.walk(text, secrets.scan)
    assert walk.views == [] and walk.found == []


def nest(text: str, levels: int) -> str:
    for _ in range(levels):
        text = b64(text)
    return text


def test_nesting_up_to_the_depth_limit_is_read() -> None:
    walk = unwrap.walk(nest(ENV, unwrap.MAX_DEPTH), secrets.scan)
    assert walk.depth == unwrap.MAX_DEPTH
    assert ("github_token", GITHUB) in walk.found


def test_nesting_deeper_than_the_limit_is_refused() -> None:
    with pytest.raises(unwrap.UnwrapLimit):
        unwrap.walk(nest(ENV, unwrap.MAX_DEPTH + 1), secrets.scan)
    with pytest.raises(unwrap.UnwrapLimit):
        unwrap.walk("%25" * 0 + "%252525252541" * 3, secrets.scan)


def test_expansion_beyond_the_bound_is_refused() -> None:
    # U+FDFA is 18 characters under NFKC.
    with pytest.raises(unwrap.UnwrapLimit):
        unwrap.walk("\ufdfa" * 100_000, secrets.scan)


def _work(text: str) -> tuple[int, int]:
    walk = unwrap.walk(text, lambda _: [])
    return walk.decoded_chars, walk.view_chars


HOSTILE: dict[str, Callable[[int], str]] = {
    "base64 of text": lambda n: wrap(b64(("word " * n)[:n])),
    "nested base64": lambda n: nest(("ab cd " * n)[: n // 2], 3),
    "percent escapes": lambda n: ("%41" * n)[:n],
    "double percent": lambda n: ("%2541 " * n)[:n],
    "entities": lambda n: ("&#65;&amp;" * n)[:n],
    "backslash escapes": lambda n: ("\\x41\\u0042" * n)[:n],
    "hex of text": lambda n: ("4142" * n)[:n],
    "0x lists": lambda n: ("0x41, " * n)[:n],
    "base64 lines": lambda n: ("QUJDREVGR0hJSktMTU5PUFFS\n" * n)[:n],
    "mixed tokens": lambda n: ("a\u200bb\u0430c " * n)[:n],
    "fullwidth": lambda n: ("ａｂｃ１２３ " * n)[:n],
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_work_is_linear_and_bounded(name: str) -> None:
    small, large = 20_000, 80_000
    d_small, v_small = _work(HOSTILE[name](small))
    d_large, v_large = _work(HOSTILE[name](large))
    # Every character is decoded a bounded number of times, and views stay
    # within the growth bound.
    assert d_large <= 4 * (unwrap.MAX_DEPTH + 1) * large
    assert v_large <= unwrap.MAX_GROWTH * large
    # Four times the input, about four times the work.
    assert d_large <= 5 * max(d_small, 1)
    assert v_large <= 5 * max(v_small, 1)


def test_a_scan_finding_in_context_only_is_not_reported_again() -> None:
    seen: list[str] = []

    def scan(text: str) -> list[Finding]:
        seen.append(text)
        at = text.find("CONTEXT")
        return [Finding("fake", at, at + 7)] if at >= 0 else []

    found = unwrap.find(f"CONTEXT {b64('some plain text here')}", scan)
    assert len(seen) == 2 and "some plain text here" in seen[1]
    assert found == [("fake", "CONTEXT")]
