"""The deterministic secret detector: formats, offsets, non-secrets and hostile input.

Secret-looking values are assembled at run time from a seeded generator and split
prefixes, so this file holds no literal that a scanner would take for a credential.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import re
import string
import time
import uuid
from collections.abc import Callable

import pytest

from gateway.guard.detectors import secrets
from gateway.guard.detectors.secrets import KINDS, common, scan, values
from gateway.guard.detectors.secrets import jwt as jwt_rule
from gateway.guard.findings import Finding

_RNG = random.Random(20240611)
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = B62 + "+/"
B64URL = B62 + "-_"


def rand(n: int, alphabet: str = B62) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def jwt() -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": rand(8), "iat": 1700000000}).encode())
    return f"{header}.{payload}.{b64url(_RNG.randbytes(32))}"


def pem_private_key(label: str = "RSA PRIVATE KEY", lines_of_key: int = 6) -> str:
    lines = [b64(_RNG.randbytes(48)) for _ in range(lines_of_key)]
    return "-----BEGIN " + label + "-----\n" + "\n".join(lines) + "\n-----END " + label + "-----"


PW = "Tr0" + "ub4dor&3x!" + rand(4)  # a password a person would type
TOKEN_BODY = rand(40)


def _case(kind: str, before: str, secret: str, after: str = "") -> tuple[str, str, str, str]:
    return kind, before, secret, after


# (kind, text before, secret value, text after): the finding must cover exactly the value.
POSITIVES = [
    _case("private_key", "key:\n", pem_private_key(), "\n"),
    _case("private_key", "", pem_private_key("EC PRIVATE KEY")),
    _case("private_key", "", pem_private_key("OPENSSH PRIVATE KEY")),
    _case("private_key", "", pem_private_key("ENCRYPTED PRIVATE KEY")),
    _case("private_key", "", pem_private_key("PGP PRIVATE KEY BLOCK")),
    _case("openai_api_key", "OPENAI_API_KEY=", "sk-" + "proj-" + rand(64, B64URL) + "A"),
    _case("openai_api_key", "use ", "sk-" + "svcacct-" + rand(48, B64URL) + "z", " now"),
    _case("openai_api_key", "", "sk-" + "admin-" + rand(40) + "9"),
    _case("openai_api_key", "legacy ", "sk-" + rand(20) + "T3Blbk" + "FJ" + rand(20)),
    _case("anthropic_api_key", "x-api-key: ", "sk-" + "ant-api03-" + rand(93, B64URL) + "AA"),
    _case("github_token", "token ", "gh" + "p_" + rand(36)),
    _case("github_token", "", "gh" + "s_" + rand(36)),
    _case("github_token", "GH=", "github" + "_pat_" + "11A" + rand(19) + "_" + rand(59)),
    _case("gitlab_token", "", "gl" + "pat-" + rand(20, B64URL[:-2]) + "-" + rand(3)),
    _case(
        "aws_access_key",
        "aws_access_key_id = ",
        "AK" + "IA" + rand(16, string.ascii_uppercase + "234567"),
    ),
    _case("aws_access_key", "", "AS" + "IA" + rand(16, string.ascii_uppercase + "234567")),
    _case("aws_secret_access_key", "aws_secret_access_key = ", rand(39, B64) + "Q"),
    _case(
        "slack_token",
        "",
        "xo" + "xb-" + rand(12, "123456789") + "-" + rand(13, "123456789") + "-" + rand(24),
    ),
    _case(
        "slack_token",
        "SLACK=",
        "xa"
        + "pp-1-A0"
        + rand(9, "ABCDEFGH1234")
        + "-"
        + rand(13, "123456789")
        + "-"
        + rand(64, HEX),
    ),
    _case(
        "slack_webhook",
        "https://hooks.slack.com/services/",
        "T0" + rand(8, "ABCDEFGH123") + "/B0" + rand(8, "ABCDEFGH123") + "/" + rand(24),
    ),
    _case("jwt", "Authorization: Bearer ", jwt()),
    _case("google_api_key", 'apiKey: "', "AI" + "zaSy" + rand(33, B64URL), '"'),
    _case("google_oauth_token", "", "ya" + "29." + rand(100, B64URL) + "x"),
    _case("google_oauth_client_secret", '"client_secret": "', "GOC" + "SPX-" + rand(28), '"'),
    _case(
        "azure_storage_key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=",
        rand(86, B64) + "==",
        ";EndpointSuffix=core.windows.net",
    ),
    _case("azure_client_secret", "client_secret=", rand(3) + "8Q~" + rand(34, B62 + "_~.")),
    _case("stripe_key", "", "sk" + "_live_" + rand(24)),
    _case("stripe_key", "", "rk" + "_live_" + rand(24)),
    _case("stripe_key", "", "sk" + "_test_" + rand(24)),
    _case("npm_token", "//registry.npmjs.org/:_authToken=", "np" + "m_" + rand(36)),
    _case("pypi_token", "", "pypi-" + "AgEIcHlwaS5vcmc" + rand(120, B64URL)),
    _case("huggingface_token", "HF_TOKEN=", "h" + "f_" + rand(34, string.ascii_letters)),
    _case(
        "discord_token",
        "",
        b64url(b"1234567890123456789")[:24] + "." + rand(6) + "." + rand(27, B64URL),
    ),
    _case("telegram_bot_token", "bot", "1234567890" + ":AA" + rand(33, B64URL)),
    _case("sendgrid_api_key", "", "S" + "G." + rand(22) + "." + rand(43)),
    _case("mailgun_api_key", "", "ke" + "y-" + rand(32, HEX)),
    _case("mailchimp_api_key", "", rand(32, HEX) + "-us" + "14"),
    _case("shopify_token", "", "shp" + "at_" + rand(32, HEX)),
    _case("digitalocean_token", "", "dop" + "_v1_" + rand(64, HEX)),
    _case("square_token", "", "sq0" + "atp-" + rand(22, B64URL)),
    _case("databricks_token", "host + ", "da" + "pi" + rand(32, HEX)),
    _case("twilio_api_key", "", "S" + "K" + rand(32, HEX)),
    _case("vault_token", "", "hv" + "s." + rand(94, B64URL)),
    _case("heroku_api_key", "", "HR" + "KU-AA" + rand(58)),
    _case("grafana_token", "", "gl" + "sa_" + rand(32) + "_" + rand(8, HEX)),
    _case("sentry_token", "", "sntry" + "s_eyJ" + rand(80, B64)),
    _case("flyio_token", "", "fo" + "1_" + rand(43)),
    _case("notion_token", "", "nt" + "n_" + rand(11, string.digits) + rand(35)),
    _case("openshift_token", "oc login --token=", "sha256" + "~" + rand(43)),
    _case("facebook_token", "", "1234567890123456" + "|" + rand(27)),
    _case("db_connection_string", "postgres://app:", PW, "@db.internal:5432/app"),
    _case("db_connection_string", "mongodb+srv://svc:", PW, "@cluster0.example.net/db"),
    _case("db_connection_string", "redis://:", PW, "@cache:6379/0"),
    _case("db_connection_string", "Server=tcp:db;Database=app;User Id=app;Password=", PW, ";"),
    _case("url_credentials", "git clone https://deploy:", PW, "@git.example.org/repo.git"),
    _case("basic_auth", "Authorization: Basic ", b64(("svc:" + PW).encode())),
    _case("basic_auth", "curl -u deploy:", PW, " https://api.example.org/v1"),
    _case("bearer_token", '-H "Authorization: Bearer ', rand(40), '"'),
    _case("password_assignment", 'password = "', PW, '"'),
    _case("password_assignment", "db:\n  password: ", PW, "\n"),
    _case("password_assignment", "DB_PASSWORD=", PW, "\n"),
    _case("password_assignment", '{"password": "', PW, '"}'),
    _case("password_assignment", "client.login(user=u, passwd='", PW, "')"),
    _case("db_connection_string", "conn = connect(host=h, passwd='", PW, "')"),
    _case("password_assignment", "mysqldump --password=", PW, " db"),
    _case("password_assignment", '<add key="SmtpPassword" value="', PW, '" />'),
    _case("password_assignment", "- name: DB_PASSWORD\n  value: ", PW, "\n"),
    _case("password_assignment", "machine api.example.com login me password ", PW, "\n"),
    _case("password_assignment", "sshpass -p '", PW, "' ssh deploy@host"),
    _case("password_assignment", "Sure, my password is ", PW, ". Thanks!"),
    _case("secret_assignment", "The access token is ", TOKEN_BODY, " if you need it."),
    _case("basic_auth", "BUNDLE_GEMS__EXAMPLE__COM=deploy:", PW, "\n"),
    _case(
        "telegram_bot_token",
        "https://api.telegram.org/bot",
        "123456789" + ":AA" + rand(33, B64URL),
        "/sendMessage",
    ),
    _case("secret_assignment", "deploy --api-token ", TOKEN_BODY, " --verbose"),
    _case("secret_assignment", 'api_key = "', TOKEN_BODY, '"'),
    _case("secret_assignment", "export SERVICE_TOKEN=", TOKEN_BODY, "\n"),
    _case("secret_assignment", "client_secret: '", TOKEN_BODY, "'"),
    _case("secret_assignment", '"accessToken": "', TOKEN_BODY, '",'),
    _case("secret_assignment", "secret=", rand(30, B64) + "==", ""),
    _case("high_entropy_token", "upload_key: ", rand(48), "\n"),
    _case("high_entropy_token", 'DEPLOY_HOOK: "', rand(20) + "9aZ" + rand(20), '"'),
]


@pytest.mark.parametrize(("kind", "before", "secret", "after"), POSITIVES)
def test_detects_each_kind_with_exact_span(kind: str, before: str, secret: str, after: str) -> None:
    text = "note: " + before + secret + after + " end"
    start = text.index(secret)
    findings = scan(text)
    spans = [(f.kind, f.start, f.end) for f in findings]
    assert (kind, start, start + len(secret)) in spans, spans
    assert kind in KINDS


def test_every_reported_kind_is_declared() -> None:
    text = "\n".join(before + secret + after for _, before, secret, after in POSITIVES)
    findings = scan(text)
    assert {f.kind for f in findings} <= KINDS
    assert len(findings) >= len(POSITIVES) - 5  # a few cases overlap in one text


def test_kubernetes_secret_values() -> None:
    value = b64(("admin:" + PW).encode())
    manifest = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\n"
        f"data:\n  username: {b64(b'admin')}\n  password: {value}\n"
    )
    findings = scan(manifest)
    start = manifest.index(value)
    assert [(f.kind, f.start, f.end) for f in findings] == [
        ("kubernetes_secret", start, start + len(value))
    ]


def test_google_service_account_json() -> None:
    key_id = rand(40, HEX)
    doc = json.dumps(
        {
            "type": "service_account",
            "project_id": "demo",
            "private_key_id": key_id,
            "private_key": pem_private_key("PRIVATE KEY"),
        }
    )
    kinds = {f.kind for f in scan(doc)}
    assert kinds == {"gcp_service_account", "private_key"}


def test_reference_seed_vectors() -> None:
    # Kinds and edge cases of the Reef reference floor (reef-vectors checks.json).
    assert [f.kind for f in scan("-----BEGIN RSA PRIVATE KEY-----")] == ["private_key"]
    assert [f.kind for f in scan("use sk-" + "proj-Ab3dEf6hIj9kLm2nOp5qRs8t please")] == [
        "openai_api_key"
    ]
    assert [f.kind for f in scan("密钥sk-" + "abcdefghijklmnopqrst")] == ["openai_api_key"]
    assert [f.kind for f in scan("gh" + "p_abcdefghij1234567890")] == ["github_token"]
    assert [f.kind for f in scan("aws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE;")] == [
        "aws_access_key"
    ]
    assert [f.kind for f in scan("token=xo" + "xa-2-abcdefghijkl")] == ["slack_token"]
    for text in (
        "token sk-" + "abcdefghijklmno here",
        "please ask-me-anything-about-the-plan today",
        "see desk-1234567890abcdefXYZ now",
        "gh" + "p_abcdefghij123456789",
        "gh" + "p_abcdefghij_1234567890",
        "AKIA" + "IOSFODNN7EXAMP",
        "xo" + "xb-12345678901",
        "-----begin private key-----",
        "-----BEGIN PUBLIC KEY-----",
    ):
        assert scan(text) == [], text


def test_offsets_survive_non_ascii_prefix() -> None:
    secret = "gh" + "p_" + rand(36)
    text = "Grüße 🌊 密钥: " + secret + " ✓"
    (finding,) = scan(text)
    assert text[finding.start : finding.end] == secret


def test_findings_are_ordered_and_do_not_leak_the_value() -> None:
    a = "gh" + "p_" + rand(36)
    b = "AK" + "IA" + rand(16, string.ascii_uppercase + "234567")
    c = "sk" + "_live_" + rand(24)
    text = f"first {c}, then {a}\nand finally {b}"
    findings = scan(text)
    assert [f.start for f in findings] == sorted(f.start for f in findings)
    assert [text[f.start : f.end] for f in findings] == [c, a, b]
    for f, secret in zip(findings, (c, a, b), strict=True):
        assert isinstance(f, Finding)
        assert secret not in repr(f)
        assert secret not in str(f)


def test_specific_format_wins_over_generic_assignment() -> None:
    token = "gh" + "p_" + rand(36)
    findings = scan(f'GITHUB_TOKEN="{token}"')
    assert [f.kind for f in findings] == ["github_token"]


COMMIT = "722f5b0dd8d897db6b23d503ac85b509ecc142c3"
SHA256 = hashlib.sha256(b"reefgate").hexdigest()
UUID = str(uuid.UUID(int=_RNG.getrandbits(128)))
SSH_RSA = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + rand(300, B64) + " user@host"
SSH_ED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rand(43, B64) + " ci@runner"
PUBLIC_PEM = (
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"
    + rand(64, B64)
    + "\n-----END PUBLIC KEY-----"
)
CERT = (
    "-----BEGIN CERTIFICATE-----\n"
    + "\n".join(b64(_RNG.randbytes(48)) for _ in range(8))
    + "\n-----END CERTIFICATE-----"
)

NEGATIVES = [
    f"fixed in {COMMIT[:7]}, see PR #6",
    f"see https://github.com/openclaw/reef/commit/{COMMIT}",
    f"git checkout {COMMIT}",
    f"sha256sum: {SHA256}  reefgate-0.1.0.tar.gz",
    f"image: registry.example.com/app@sha256:{SHA256}",
    f'<script src="app.js" integrity="sha384-{b64(_RNG.randbytes(48))}"></script>',
    f'"integrity": "sha512-{b64(_RNG.randbytes(64))}",',
    f'checksum: "{b64(_RNG.randbytes(32))}"',
    f'"md5Hash": "{b64(_RNG.randbytes(16))}"',
    f"request_id={UUID} status=200",
    f'{{"id": "{UUID}", "tenant_id": "{uuid.uuid4()}"}}',
    f'idempotency_key = "{UUID}"',
    SSH_RSA,
    SSH_ED,
    PUBLIC_PEM,
    CERT,
    "OPENAI_API_KEY=sk-" + "x" * 48,
    'api_key: "<your-key>"',
    "password: changeme",
    "token: REDACTED",
    'password: "***"',
    'api_key = "your_api_key_here"',
    'secret = "example"',
    'password = "dummy"',
    "password: test",
    "aws_access_key_id = AK" + "IA" + "X" * 16,
    "GITHUB_TOKEN=gh" + "p_" + "x" * 36,
    'password: "${DB_PASSWORD}"',
    "secret=${SECRET}",
    "password: $PASSWORD",
    "token = process.env.GITHUB_TOKEN",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "password=get_password()",
    "DB_PASSWORD: ${{ secrets.DB_PASSWORD }}",
    "password = settings.DB_PASSWORD",
    "administrator_login_password = var.db_password",
    "api_key = None",
    "def check_password(password: str) -> bool:",
    "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    "max_tokens = 4096",
    'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")',
    "private_key_path = /home/deploy/.ssh/id_ed25519",
    r"C:\Users\deploy\.aws\credentials",
    "https://example.com/docs/getting-started?page=2&lang=en",
    "git@github.com:openclaw/reef.git",
    f"data: {b64(b'Hello, world! This is only ordinary text, nothing secret.')}",
    'version = "1.2.3-beta.4+build.5"',
    "Python 3.11.7 (main, May  9 2026, 07:35:25) [GCC 12.2.0]",
    "curl -u $USER:$PASS https://api.example.org",
    'curl --user "username:password" https://api.example.org',
    "postgres://user:password@localhost:5432/app",
    "postgres://localhost:5432/app",
    "The password must be at least 12 characters long.",
    "The password is incorrect, please try again.",
    "The token is expired; log in again.",
    "This key is used for signing releases.",
    "Rotate the API key and the client secret every 90 days.",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_engineering_text_is_not_flagged(text: str) -> None:
    assert scan(text) == [], [(f.kind, text[f.start : f.end]) for f in scan(text)]


def _clean_corpus(size: int) -> str:
    code = [
        "def handler(event: dict[str, Any], context: Context) -> Response:",
        "    token = tokenizer.encode(text)[:max_tokens]",
        "    cache_key = f'user:{user_id}:profile'",
        "    key = sorted(items, key=lambda kv: kv[1])",
        "    password_field = form.fields['password']",
        "    secret_name = os.environ.get('SECRET_NAME', 'app/db')",
        "    return Response(status=200, body=json.dumps(result))",
        "for key, value in headers.items():",
        "    if key.lower() == 'authorization':",
        "        auth = value.split()[0]",
        "class TokenBucket:",
        "    def refill(self, tokens: int) -> None: ...",
    ]
    prose = [
        "The gateway checks every request before it leaves the cluster.",
        "Please rotate the credentials and update the key vault references.",
        "Set the password policy to require twelve characters and a symbol.",
        "See the design notes; the token budget is 8k per turn.",
    ]
    rows: list[str] = []
    i = 0
    while sum(map(len, rows)) < size:
        sha = hashlib.sha1(str(i).encode()).hexdigest()
        digest = hashlib.sha256(str(i).encode()).hexdigest()
        rid = uuid.UUID(int=_RNG.getrandbits(128))
        rows.append(code[i % len(code)])
        rows.append(f"2024-05-01T12:{i % 60:02d}:33Z INFO request_id={rid} path=/v1/items/{i}")
        rows.append(f"[build] commit {sha} image sha256:{digest} in {i % 90}s")
        rows.append(f'DEBUG cache miss key="session:{rid}" ttl=3600')
        rows.append(prose[i % len(prose)])
        i += 1
    return "\n".join(rows)[:size]


def test_one_megabyte_of_clean_text_returns_nothing() -> None:
    text = _clean_corpus(1_000_000)
    assert len(text) == 1_000_000
    started = time.perf_counter()
    assert scan(text) == []
    # Informational only (pytest -s); speed is measured outside the test suite.
    elapsed = time.perf_counter() - started
    print(f"\n1 MB of keyword-dense clean text: {1 / elapsed:.0f} MB/s (informational)")


@pytest.mark.parametrize(
    "text",
    [
        "a" * 200_000,
        "=" * 100_000,
        ":" * 100_000,
        "-" * 100_000,
        "_" * 100_000,
        "." * 100_000,
        "~" * 100_000,
        "key=" * 25_000,
        "password: " * 20_000,
        "eyJ" * 50_000,
        "-----BEGIN RSA PRIVATE KEY-----\n" * 5_000,
        "curl -u a:b " * 10_000,
        "http://a:b@" * 10_000,
        "AKIA" * 50_000,
        'password="' + "a" * 200_000,
        "\\" * 100_000,
        "\ud800" * 1_000 + "sk-" * 1_000,
    ],
    ids=lambda t: repr(t[:12]),
)
def test_pathological_input_completes(text: str) -> None:
    findings = scan(text)
    assert all(f.kind in KINDS for f in findings)


def test_short_and_empty_text() -> None:
    assert scan("") == []
    assert scan("short") == []


# ---------------------------------------------------------------------------
# The prefilter: where the scan looks is a superset of where any rule matches
# ---------------------------------------------------------------------------


def _prefilter_samples() -> list[str]:
    texts = [before + secret + after for _, before, secret, after in POSITIVES]
    texts += NEGATIVES
    clean = _clean_corpus(12_000)
    texts += [clean[i : i + 600] for i in range(0, len(clean), 600)]
    rng = random.Random(7)
    variants: list[str] = []
    for t in texts:
        variants.append(t.upper())
        variants.append("".join(c.swapcase() if rng.random() < 0.3 else c for c in t))
        i = rng.randrange(len(t) + 1)
        variants.append(
            t[:i] + rng.choice(["€", "ſ", "K", "İ", "\u00a0", "密钥", "\ud800"]) + t[i:]
        )
    return texts + variants


PREFILTER_SAMPLES = _prefilter_samples()


@pytest.mark.parametrize("strategy", ["one pattern", "one pattern per anchor"])
def test_prefilter_finds_every_position_a_rule_matches(
    monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    from gateway.guard.detectors.secrets import engine

    monkeypatch.setattr(engine, "_SPLIT_AT", 10**9 if strategy == "one pattern" else 0)
    for text in PREFILTER_SAMPLES:
        found = engine._candidates(text)
        for i, p in enumerate(engine._PASSES):
            expected = [
                pos
                for pos, c in enumerate(text)
                if c in p.anchors and p.rx.match(text, pos) is not None
            ]
            missed = sorted(set(expected) - set(found.get(i, [])))
            assert not missed, (i, p.rx.pattern[:40], [text[m : m + 30] for m in missed])


def test_both_strategies_report_the_same_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.guard.detectors.secrets import engine

    long_texts = PREFILTER_SAMPLES + [
        "\n".join(PREFILTER_SAMPLES[i : i + 25]) for i in range(0, 400, 25)
    ]
    monkeypatch.setattr(engine, "_SPLIT_AT", 10**9)
    one = [scan(t) for t in long_texts]
    monkeypatch.setattr(engine, "_SPLIT_AT", 0)
    assert [scan(t) for t in long_texts] == one
    assert sum(map(len, one)) >= len(POSITIVES)


def test_every_pass_is_found_by_exactly_one_per_anchor_search() -> None:
    from gateway.guard.detectors.secrets import engine

    owners: dict[int, int] = {}
    for _, _, passes in (*engine._TEXT_SEARCHES, *engine._LOWER_SEARCHES):
        for i in passes:
            owners[i] = owners.get(i, 0) + 1
    assert owners == dict.fromkeys(range(len(engine._PASSES)), 1)


@pytest.mark.parametrize("pad", [0, 2000])
def test_keywords_in_any_case_next_to_non_ascii_text(pad: int) -> None:
    filler = "Grüße, 密钥 und so weiter. " * (pad // 24)
    for name in ("Password", "DB_PASSWORD", "API_KEY", "Client_Secret", "x-Auth-Token"):
        text = filler + f'{name} = "{TOKEN_BODY}"\n' + filler
        start = text.index(TOKEN_BODY)
        spans = [(f.start, f.end) for f in scan(text)]
        assert (start, start + len(TOKEN_BODY)) in spans, name


# ---------------------------------------------------------------------------
# PEM private keys in other wrappings
# ---------------------------------------------------------------------------

PEM_LABELS = [
    "RSA PRIVATE KEY",
    "EC PRIVATE KEY",
    "DSA PRIVATE KEY",
    "OPENSSH PRIVATE KEY",
    "ENCRYPTED PRIVATE KEY",
    "PRIVATE KEY",
]
PEMS = {label: pem_private_key(label) for label in PEM_LABELS}
LINE_PREFIXES = ["# ", "// ", "> ", "; ", "-- ", " * ", "    # ", "\t// ", ">> ", "#", "% ", "! "]


def _prefixed(block: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in block.split("\n"))


def _without_end(pem: str) -> str:
    return pem[: pem.index("\n-----END")]


def _kinds(text: str) -> list[str]:
    return [f.kind for f in scan(text)]


@pytest.mark.parametrize("label", PEM_LABELS)
@pytest.mark.parametrize("prefix", LINE_PREFIXES)
def test_private_key_behind_a_prefix_on_every_line(label: str, prefix: str) -> None:
    for pem in (PEMS[label], _without_end(PEMS[label])):
        text = "deploy notes:\n" + _prefixed(pem, prefix) + "\nthat was the key\n"
        assert "private_key" in _kinds(text), text


def test_legacy_encrypted_key_behind_comments() -> None:
    lines = PEMS["RSA PRIVATE KEY"].split("\n")
    headers = ["Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC," + rand(32, HEX).upper(), ""]
    pem = "\n".join([lines[0], *headers, *lines[1:]])
    assert "private_key" in _kinds(_prefixed(pem, " * "))
    assert "private_key" in _kinds(_prefixed(pem, "# "))


def _java_concat(pem: str) -> str:
    return "String key =\n" + " +\n".join(f'    "{line}\\n"' for line in pem.split("\n")) + ";"


def _python_implicit(pem: str) -> str:
    return "KEY = (\n" + "\n".join(f'    "{line}\\n"' for line in pem.split("\n")) + "\n)"


def _crlf_json(pem: str) -> str:
    return json.dumps({"private": pem.replace("\n", "\r\n")})


def _json_in_json(pem: str) -> str:
    return json.dumps({"body": json.dumps({"key": pem})})


def _array_of_lines(pem: str) -> str:
    return json.dumps({"lines": pem.split("\n")})


ENCODINGS = [_java_concat, _python_implicit, _crlf_json, _json_in_json, _array_of_lines]


@pytest.mark.parametrize("label", PEM_LABELS)
@pytest.mark.parametrize("encode", ENCODINGS, ids=lambda f: f.__name__)
def test_private_key_in_escaped_or_concatenated_strings(
    label: str, encode: Callable[[str], str]
) -> None:
    for pem in (PEMS[label], _without_end(PEMS[label])):
        assert "private_key" in _kinds(encode(pem)), encode(pem)


@pytest.mark.parametrize("prefix", ["", *LINE_PREFIXES])
def test_public_keys_and_certificates_still_pass_in_any_wrapping(prefix: str) -> None:
    for block in (PUBLIC_PEM, CERT, SSH_RSA, SSH_ED):
        for text in (_prefixed(block, prefix), *(encode(block) for encode in ENCODINGS)):
            assert scan(text) == [], text


# ---------------------------------------------------------------------------
# Long values under password and strong names
# ---------------------------------------------------------------------------


def _kubeconfig() -> tuple[str, str, str]:
    cert = b64(CERT.encode())
    key = b64(pem_private_key("RSA PRIVATE KEY", 26).encode())  # a 2048-bit key: 2.3 KB
    config = (
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n"
        f"    client-certificate-data: {cert}\n    client-key-data: {key}\n"
    )
    return config, cert, key


def test_kubeconfig_client_key_data_is_judged_however_long() -> None:
    config, cert, key = _kubeconfig()
    assert len(key) > 2000
    start = config.index(key)
    spans = [(f.kind, f.start, f.end) for f in scan(config)]
    assert spans == [("secret_assignment", start, start + len(key))]
    assert config.index(cert) not in [s for _, s, _ in spans]


LONG_PW = "Zq" + rand(298, B62 + "!#%&*+-?@^_~")


@pytest.mark.parametrize(
    ("kind", "before", "secret", "after"),
    [
        ("password_assignment", "db:\n  password: ", LONG_PW, "\n"),
        ("password_assignment", '{"db_password": "', LONG_PW, '"}'),
        ("secret_assignment", "aws_session_token = ", rand(700, B64) + "==", "\n"),
        ("secret_assignment", '"client_secret": "', rand(1500, B64URL), '"'),
        ("bearer_token", "Authorization: Bearer ", rand(600, B64URL), "\n"),
    ],
)
def test_long_values_are_judged(kind: str, before: str, secret: str, after: str) -> None:
    text = before + secret + after
    start = text.index(secret)
    assert (kind, start, start + len(secret)) in [(f.kind, f.start, f.end) for f in scan(text)]


@pytest.mark.parametrize(
    "text",
    [
        "secret: " + "This value is a long description of what the secret is for. " * 6,
        '"client_secret": "' + "line one of a note\\n" * 20 + '"',
        "password: " + "x" * 300,
        "password: " + "REDACTED" * 40,
        "cache_key: " + rand(300),
        "client-certificate-data: " + b64(CERT.encode()),
    ],
)
def test_long_prose_placeholders_and_weak_names_still_pass(text: str) -> None:
    assert scan(text) == [], [(f.kind, f.start, f.end) for f in scan(text)]


# ---------------------------------------------------------------------------
# Key/value pairs parsed out of JSON: json.dumps(key) + ": " + json.dumps(value)
# ---------------------------------------------------------------------------

PAIR_KEYS = [
    "password",
    "passwd",
    "pwd",
    "db_password",
    "DB_PASSWORD",
    "Password",
    "apiKey",
    "api-key",
    "api_key",
    "x-api-key",
    "X-API-Key",
    "client_secret",
    "clientSecret",
    "aws_secret_access_key",
    "AWS_SECRET_ACCESS_KEY",
    "auth_token",
    "authToken",
    "access_token",
    "refresh_token",
    "secret",
    "secret_key",
    "private_key",
    "token",
    "passphrase",
    "Authorization",
]
PAIR_VALUES = [
    "Xq7!Lm2pR9vT#k4",
    rand(40, B64URL),
    'Tr0ub4"dor&3x!Q',  # a quote, escaped by json.dumps
    "C0rr3ct\\Horse!9b",  # a backslash, escaped by json.dumps
    rand(39, B64) + "Q",
]


def pair(key: str, value: str) -> str:
    return json.dumps(key) + ": " + json.dumps(value)


@pytest.mark.parametrize("key", PAIR_KEYS)
@pytest.mark.parametrize("value", PAIR_VALUES)
def test_secret_in_a_key_value_pair_is_found(key: str, value: str) -> None:
    assert secrets.names_secret(key)
    if key == "Authorization":
        value = "Bearer " + value
    text = pair(key, value)
    escaped = json.dumps(value)[1:-1]
    start = text.index(escaped, len(json.dumps(key)))
    spans = [(f.start, f.end) for f in scan(text)]
    assert any(s >= start and e <= start + len(escaped) for s, e in spans), (text, spans)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("password", "changeme"),
        ("password", ""),
        ("password", "${DB_PASSWORD}"),
        ("token_count", "12"),
        ("max_tokens", "4096"),
        ("keyboard", "qwerty"),
        ("api_key", "${OPENAI_API_KEY}"),
        ("api_key", "<your-api-key>"),
        ("secret_name", "prod/db/credentials"),
        ("token_type", "Bearer"),
        ("auth", "none"),
        ("password_policy", "at least 12 characters"),
        ("authorization_url", "https://example.com/oauth/authorize"),
        ("key", "user:1234:profile"),
        ("public_key", SSH_ED),
        ("login", "deploy-bot"),
    ],
)
def test_ordinary_pairs_still_pass(key: str, value: str) -> None:
    assert scan(pair(key, value)) == [], pair(key, value)


@pytest.mark.parametrize(
    ("key", "names"),
    [
        *((k, True) for k in PAIR_KEYS),
        ("PASSWORD", True),
        ("Login", True),
        ("credentials", True),
        ("keyboard", True),  # could: the scan decides
        ("model", False),
        ("messages", False),
        ("temperature", False),
        ("content", False),
        ("role", False),
        ("tool_choice", False),
        ("", False),
        ("pässwörd", False),  # the passes read non-ASCII as "?", so the same here
    ],
)
def test_names_secret(key: str, names: bool) -> None:
    assert secrets.names_secret(key) is names


# ---------------------------------------------------------------------------
# The JWT rule reads each header run once; it finds what its one pattern finds
# ---------------------------------------------------------------------------


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    kept: list[tuple[int, int]] = []
    for s, e in sorted(set(spans), key=lambda se: (se[0], -se[1])):
        if not kept or e > max(k[1] for k in kept):
            kept.append((s, e))
    return kept


def _jwts_by_pattern(text: str) -> list[tuple[int, int]]:
    """_JWT_RE tried at every left-bounded "eyJ", as the rule once did."""
    found = []
    for m in re.finditer("(?=eyJ)", text):
        start = m.start()
        if start and text[start - 1].isascii() and text[start - 1].isalnum():
            continue
        jm = jwt_rule._JWT_RE.match(text, start)
        if jm is None or values._MARKER_RE.search(jm.group(0)):
            continue
        header = jm.group(0).split(".", 1)[0]
        try:
            raw = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
        except (binascii.Error, ValueError):
            continue
        if raw.startswith(b'{"'):
            found.append((start, jm.end()))
    return _outermost(found)


def _jwts_by_rule(text: str) -> list[tuple[int, int]]:
    ctx = common._Ctx(text, [], set())
    for m in jwt_rule._JWT_PASS_RE.finditer(text):
        jwt_rule._on_jwt(ctx, m)
    return _outermost([(s, e) for s, e, _, _ in ctx.hits])


def test_jwt_rule_matches_its_pattern() -> None:
    rng = random.Random(31)
    # Header-like runs, dots, and what the rule has to notice: markers, spaces,
    # "eyJ" inside runs, runs too short or too long.
    parts = ["-eyJ", " eyJ", "eyJ", ".", ".", "-", "_", " ", "xxxx", "here", "a" * 4100]
    checked = 0
    for _ in range(8000):
        text = "".join(
            rng.choice(parts)
            if rng.random() < 0.5
            else "".join(rng.choices(B64URL, k=rng.randint(1, 16)))
            for _ in range(rng.randint(1, 16))
        )
        expected = _jwts_by_pattern(text)
        assert _jwts_by_rule(text) == expected, text
        checked += bool(expected)
    assert checked > 100
