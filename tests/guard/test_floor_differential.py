"""The secret floor gives the verdicts of its frozen reference, text for text.

``tests/guard/_reference_floor`` is the secrets package and ``unwrap`` as they
were before their speed work. Every change meant to make the floor cheaper must
leave what it finds unchanged: the same (kind, value) pairs in the same order,
and the same refusal (`UnwrapLimit`) where the reference refuses. Held here on
every labelled corpus row, every rule sample (plain and wrapped), the bench's
texts, and a few thousand seeded texts built to reach the gates and the
decoders: tokens, keywords, base64, hex, escapes, look-alikes, invisibles,
texts cut at random places.

Secret-looking values are built at run time from rule samples and random
characters; this file holds none.
"""

from __future__ import annotations

import base64
import html
import json
import random
import string
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import _corpus as corpus
from gateway.guard import floor
from gateway.guard.detectors.secrets.contextual import CONTEXTUAL
from gateway.guard.detectors.secrets.rules import RULES
from tests.guard._reference_floor import secrets as ref_secrets
from tests.guard._reference_floor import unwrap as ref_unwrap
from tests.vectors import corpora

Outcome = list[tuple[str, str]] | tuple[str, str]


def _run(find: object, text: str) -> Outcome:
    try:
        return find(text)  # type: ignore[operator,no-any-return]
    except ValueError as exc:  # UnwrapLimit, one class per copy: compared by name
        return (type(exc).__name__, str(exc))


def reference(text: str) -> Outcome:
    return _run(lambda t: ref_unwrap.find(t, ref_secrets.scan), text)


def live(text: str) -> Outcome:
    return _run(floor.find, text)


def differences(texts: Iterator[str] | list[str]) -> list[tuple[str, Outcome, Outcome]]:
    out = []
    for text in texts:
        want, got = reference(text), live(text)
        if want != got:
            out.append((text[:200], want, got))
    return out


# ---------------------------------------------------------------------------
# Fixed texts
# ---------------------------------------------------------------------------


def _samples() -> list[str]:
    out: list[str] = []
    for rule in RULES:
        out.extend(rule.matches)
        out.extend(rule.non_matches)
    for sample in CONTEXTUAL.values():
        out.extend(sample.matches)
        out.extend(sample.non_matches)
    return out


SAMPLES = _samples()


def _wrappings(text: str) -> list[str]:
    raw = text.encode()
    b64 = base64.b64encode(raw).decode()
    return [
        text,
        f"value: {b64}",
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        raw.hex(),
        "0x" + raw.hex(),
        ", ".join(f"0x{b:02x}" for b in raw),
        "".join(f"%{b:02X}" for b in raw),
        "".join(f"\\x{b:02x}" for b in raw),
        "".join(f"\\u{ord(c):04x}" for c in text if ord(c) < 0x10000),
        "".join(f"&#{ord(c)};" for c in text),
        html.escape(text),
        "\u200b".join(text),
        unicodedata.normalize("NFKC", text).translate(_FULLWIDTH),
        f'key = "{b64[:20]}"\n    "{b64[20:]}"',
        base64.b64encode(b64.encode()).decode(),
        f"echo {b64} | base64 -d",
        json.dumps({"config": text}),
    ]


_FULLWIDTH = {c: c + 0xFEE0 for c in range(0x21, 0x7F)}


def test_rule_samples_plain_and_wrapped() -> None:
    texts = [w for s in SAMPLES for w in _wrappings(s)]
    assert len(texts) > 2000
    assert differences(texts) == []


def test_labelled_corpora() -> None:
    files = sorted(corpora().glob("*.jsonl"))
    assert files, f"no corpora under {corpora()}"
    # split("\n"), not splitlines(): rows hold U+2028 and friends inside strings.
    lines = [line for f in files for line in f.read_text("utf-8").split("\n") if line.strip()]
    texts = [json.loads(line)["text"] for line in lines]
    assert len(texts) > 2000
    assert differences(texts) == []


def test_agent_turns() -> None:
    turns = corpus.AgentTurns()
    history = turns.payload("", "", stream=False)["messages"]
    assert isinstance(history, list)
    texts = [*turns.users, *turns.tools, *corpus.message_texts(history)]
    assert differences(texts) == []


def test_bench_generators() -> None:
    rng = random.Random(corpus.SEED + 11)
    texts: list[str] = []
    for _ in range(150):
        texts.append(corpus.code(rng))
        texts.append(corpus.log_lines(rng, rng.randint(1, 12)))
        texts.append(corpus.prose(rng, rng.randint(1, 8)))
        texts.append(corpus.config_block(rng))
        texts.append(corpus.secret(rng))
        texts.append(corpus.tool_output(rng, rng.choice((300, 1200, 4000))))
    clean = corpus.clean_text(60_000, seed=corpus.SEED + 12)
    dirty, _ = corpus.with_secrets(clean, 2_000, seed=corpus.SEED + 13)
    texts.extend(dirty[i : i + 3000] for i in range(0, len(dirty), 2500))
    conv = corpus.message_texts(corpus.conversation(random.Random(corpus.SEED + 14), 40_000))
    texts.extend(conv)
    assert differences(texts) == []


# ---------------------------------------------------------------------------
# Seeded random texts
# ---------------------------------------------------------------------------

_B64 = string.ascii_letters + string.digits + "+/"
_WORD_TEXT = (
    "the request failed because retry config value user order cache handler "
    "token password secret key auth login cred pw pass api_key client_secret "
    "Authorization Bearer Basic export set --password -p curl -u https:// "
    "postgres:// IDENTIFIED BY sk- ghp_ xoxb- AKIA eyJ -----BEGIN PRIVATE KEY "
    "$TOKEN ${SECRET} os.environ[ <password> </password> null None changeme "
    "example xxxxxxxx ******** redacted"
)
_WORDS = _WORD_TEXT.split()
_SEPS = (" ", " ", " ", "\n", "=", ": ", '="', '"', "'", ", ", "\t", "/", "-", "_", ".", "\\n")
_LOOKALIKE = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441"}
_INVISIBLE = ("\u200b", "\u200d", "\u00ad", "\ufeff", "\u2060")


def _rand(rng: random.Random, alphabet: str, lo: int, hi: int) -> str:
    return "".join(rng.choices(alphabet, k=rng.randint(lo, hi)))


def _piece(rng: random.Random) -> str:
    kind = rng.randrange(25)
    if kind == 22:  # a CamelCase name, which the run gate judges without the walk
        words = rng.choices(("connection", "reset", "error", "handler", "queue", "abc"), k=4)
        return "".join(w.capitalize() for w in words)
    if kind == 23:
        return "0x" + _rand(rng, "0123456789abcdef", 15, 40)
    if kind == 24:  # hex runs with every lead digit and both parities
        return rng.choice("0123456789abcdef") + _rand(rng, "0123456789abcdef", 15, 41)
    if kind < 4:
        return rng.choice(_WORDS)
    if kind == 4:
        return rng.choice(SAMPLES)
    if kind == 5:
        return rng.choice(_wrappings(rng.choice(SAMPLES)))
    if kind == 6:
        return _rand(rng, _B64, 8, 90)
    if kind == 7:
        return _rand(rng, "0123456789abcdef", 8, 72)
    if kind == 8:
        return base64.b64encode(rng.randbytes(rng.randint(4, 80))).decode()
    if kind == 9:
        inner = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6)))
        return base64.b64encode(inner.encode()).decode()
    if kind == 10:
        return inner_hex(rng)
    if kind == 11:
        return "".join(f"%{b:02x}" for b in rng.choice(SAMPLES).encode())
    if kind == 12:
        word = rng.choice(SAMPLES)
        return "".join(_LOOKALIKE.get(c, c) for c in word)
    if kind == 13:
        word = rng.choice(_WORDS + SAMPLES)
        at = rng.randrange(len(word) + 1)
        return word[:at] + rng.choice(_INVISIBLE) + word[at:]
    if kind == 14:
        return str(corpus._uuid(rng))
    if kind == 15:
        return _rand(rng, string.ascii_letters + string.digits + "_-", 4, 40)
    if kind == 16:
        return rng.choice(("日本語のテキスト", "Ελληνικά", "naïve café", "Привет мир", "🙂👍"))
    if kind == 17:
        return rng.choice(("\\x", "\\u00", "&#", "&amp;", "%", "0x", "%2", "&lt;", "\\U0001"))
    if kind == 18:
        key = rng.choice(("password", "api_key", "SECRET_TOKEN", "auth", "pw", "client_secret"))
        value = _rand(rng, string.ascii_letters + string.digits + "!@#$%^&*", 6, 40)
        op = rng.choice(("=", ": ", " = ", '="', " is "))
        return key + op + value
    if kind == 19:
        raw = base64.b64encode(rng.randbytes(rng.randint(40, 200))).decode()
        return "\n".join(raw[i : i + 64] for i in range(0, len(raw), 64))
    if kind == 20:
        return rng.choice(string.punctuation) * rng.randint(1, 3)
    return unicodedata.normalize("NFKC", rng.choice(SAMPLES)).translate(_FULLWIDTH)


def inner_hex(rng: random.Random) -> str:
    inner = rng.choice(SAMPLES) if rng.random() < 0.5 else rng.choice(_WORDS) * 3
    return inner.encode().hex()


def _text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.choice((1, 2, 4, 8, 16, 40))):
        parts.append(_piece(rng))
        parts.append(rng.choice(_SEPS))
    text = "".join(parts)
    if rng.random() < 0.25:
        lo = rng.randrange(len(text))
        text = text[lo : lo + rng.randint(1, len(text))]  # a window cut anywhere
    if rng.random() < 0.1:
        text = base64.b64encode(text.encode()).decode()  # one level deeper
    return text


@pytest.mark.parametrize("seed", range(4))
def test_seeded_random_texts(seed: int) -> None:
    rng = random.Random(20261203 + seed)
    texts = [_text(rng) for _ in range(1000)]
    assert differences(texts) == []


def _run_text(rng: random.Random) -> str:
    """ASCII text of base64 and hex runs only, most of them of the kinds the walk
    turns away (hashes, ids, names, paths), with the glue that changes that: a
    leading position, "=" padding, a continued line, "-" and "_"."""
    pieces = []
    for _ in range(rng.randint(1, 6)):
        kind = rng.randrange(9)
        if kind < 3:
            pieces.append(_piece_hex(rng))
        elif kind == 3:
            words = rng.choices(("connection", "reset", "error", "abc", "fade", "bed"), k=4)
            pieces.append("".join(w.capitalize() for w in words))
        elif kind == 4:
            pieces.append(_rand(rng, string.ascii_lowercase + "/0123456789", 16, 40))
        elif kind == 5:
            pieces.append(_rand(rng, string.ascii_uppercase + "_0123456789", 16, 40))
        elif kind == 6:
            pieces.append(base64.b64encode(rng.choice(SAMPLES).encode()).decode())
        elif kind == 7:
            pieces.append("0x" + _piece_hex(rng))
        else:
            pieces.append(_rand(rng, _B64, 16, 48))
        pieces.append(rng.choice((" ", "\n", "=", "==\n", " # ", "\\n", "-", "_", '",\n  "', ": ")))
    return "".join(pieces)


def _piece_hex(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return rng.choice(SAMPLES + _WORDS).encode().hex()  # hex that spells text
    return _rand(rng, "0123456789abcdef", 16, 65)


def test_seeded_run_texts() -> None:
    rng = random.Random(20261204)
    texts = [_run_text(rng) for _ in range(3000)]
    assert differences(texts) == []


@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(SAMPLES),
            st.sampled_from(_WORDS),
            st.text(alphabet=_B64 + "=-_", min_size=12, max_size=60),
            st.text(alphabet="0123456789abcdefABCDEFx", min_size=12, max_size=60),
            st.text(max_size=20),
            st.sampled_from(_SEPS),
        ),
        max_size=30,
    )
)
def test_generated_texts(parts: list[str]) -> None:
    text = "".join(parts)
    assert reference(text) == live(text)
