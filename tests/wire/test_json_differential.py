"""The orjson reader against the stdlib one: every body, the same outcome.

``jsontext.fast_loads`` answers only when orjson's value is provably the one
the strict stdlib decoder returns; otherwise the stdlib path decides. These
tests parse generated bodies (duplicate keys at any depth, escapes of every
kind, ':' spelled as an escape, unicode, surrogates, numbers at and past
every limit, deep nesting, invalid UTF-8 and invalid JSON) both ways through
``parse_json`` and demand the same value, types, key order and float signs
included, or the same refusal, code and message included.

They run whether or not REEFGATE_NO_ORJSON is set (the codec is built here),
and are skipped only where orjson is not installed.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway import fastjson
from gateway.errors import BadRequest
from gateway.wire import body, jsontext

CODEC = fastjson.orjson_codec()
pytestmark = pytest.mark.skipif(CODEC is None, reason="orjson is not installed")


# -- outcomes ---------------------------------------------------------------


def outcome(data: bytes, codec: fastjson.Codec | None, monkeypatch: pytest.MonkeyPatch) -> object:
    """What the gateway makes of a JSON body: the value, or the refusal it shows."""
    with monkeypatch.context() as patch:
        patch.setattr(jsontext, "_CODEC", codec)
        try:
            return ("value", body.parse_json(data))
        except BadRequest as exc:
            return ("refused", exc.code, exc.message)


def same(a: object, b: object) -> bool:
    """Equal values of the same types: dict key order and the sign of zero count."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def check(data: bytes, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Asserts both readers agree on `data`; True when the fast reader decided it."""
    assert CODEC is not None
    fast = outcome(data, CODEC, monkeypatch)
    slow = outcome(data, None, monkeypatch)
    assert same(fast, slow), (data[:300], fast, slow)
    return jsontext.fast_loads(data, CODEC) is not jsontext.UNDECIDED


# -- a JSON writer that can write anything ----------------------------------


class Obj(list[tuple[str, object]]):
    """An object as its members in order, so keys may repeat."""


class Raw(str):
    """A token written as is: numbers spelled any way, invalid ones too."""


NUMBER_TOKENS = [
    "0",
    "-0",
    "-0.0",
    "0.0",
    "0e0",
    "-0e0",
    "0E+0",
    "1E2",
    "1e+2",
    "1e-2",
    "1.5E-7",
    "1e400",
    "-1e400",
    "1e-400",
    "-1e-400",
    "1.7976931348623157e308",
    "1.7976931348623158e308",
    "4.9e-324",
    "2.4703282292062328e-324",
    "2.4703282292062327e-324",
    "5e-324",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "123456789012345678",
    "1234567890123456789",
    "12345678901234567890123",
    "0.1000000000000000055511151231257827",
    "3.141592653589793238462643383279",
    "1" + "0" * 308,
    "1" + "0" * 309,
    "1" + "0" * 4299,
    "1" + "0" * 4300,
    "-" + "9" * 4301,
    "NaN",
    "Infinity",
    "-Infinity",
    "01",
    "-01",
    "1.",
    ".5",
    "+1",
    "0x10",
    "1e",
    "1e+",
    "--1",
    "1.0e+00000000000000000001",
    "0.00000000000000000001",
    "100000000000000000000.0",
]
KEYS = ["a", "b", "a", ":", "a:b", "é", "😀", "", "A", "::", "中文", "\x00", '"', "\\", "/"]
CHARS = 'ab:xyz :: "\\/\b\f\n\r\t\x00\x01\x1f\x7f\x80é\u00ff\u2028\u2029中\ufeff\uffff😀\U0010ffff'
# Lone surrogates: rarer, since written raw they make the body invalid UTF-8.
SURROGATES = "\ud800\udbff\udc00\udfff"
SPACES = ["", "", "", " ", "  ", "\n", "\t", "\r\n"]


def gen_value(rng: random.Random, depth: int = 0) -> object:
    r = rng.random()
    if depth >= 5 or r < 0.4:
        return gen_scalar(rng)
    if r < 0.6:
        return [gen_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    pairs = Obj()
    for _ in range(rng.randint(0, 4)):
        pairs.append((gen_key(rng), gen_value(rng, depth + 1)))
    return pairs


def gen_key(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return rng.choice(KEYS)
    return gen_string(rng)


def gen_string(rng: random.Random) -> str:
    text = "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 12)))
    if rng.random() < 0.03:
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(SURROGATES) + text[at:]
    return text


def gen_scalar(rng: random.Random) -> object:
    kind = rng.randint(0, 9)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(10**6), 10**6)
    if kind == 2:
        # Around the limits of 53, 63 and 64 bits, and past them.
        bits = rng.choice([53, 63, 64, 65, 80, 200])
        return rng.choice([-1, 1]) * (2**bits + rng.randint(-3, 3))
    if kind == 3:
        return rng.uniform(-1e6, 1e6)
    if kind == 4:
        return rng.choice([0.0, -0.0, 5e-324, 1.7976931348623157e308, 1e-7, 1e16, 1e21, 0.1])
    if kind == 5:
        return Raw(rng.choice(NUMBER_TOKENS))
    if kind == 6:
        return float.fromhex(
            f"{rng.choice('+-')}0x1.{rng.getrandbits(52):013x}p{rng.randint(-1074, 1023)}"
        )
    return gen_string(rng)


def write(value: object, rng: random.Random, style: str) -> str:
    out: list[str] = []
    _write(value, rng, style, out)
    return "".join(out)


def _space(rng: random.Random, style: str) -> str:
    if style == "compact":
        return ""
    # A vertical tab or a no-break space is whitespace to Python, not to JSON.
    return rng.choice(SPACES) if rng.random() < 0.995 else rng.choice(["\x0b", "\xa0"])


def _write(value: object, rng: random.Random, style: str, out: list[str]) -> None:
    if isinstance(value, Raw):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(_string(value, rng, style))
    elif isinstance(value, Obj):
        out.append("{")
        for i, (key, item) in enumerate(value):
            if i:
                out.append(_space(rng, style) + "," + _space(rng, style))
            out.append(_string(key, rng, style))
            out.append(_space(rng, style) + ":" + _space(rng, style))
            _write(item, rng, style, out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[" + _space(rng, style))
        for i, item in enumerate(value):
            if i:
                out.append("," + _space(rng, style))
            _write(item, rng, style, out)
        out.append(_space(rng, style) + "]")
    else:
        out.append(json.dumps(value))


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(text: str, rng: random.Random, style: str) -> str:
    if style == "compact":
        return json.dumps(text, ensure_ascii=False)
    if style == "ascii":
        return json.dumps(text)
    parts = ['"']
    for ch in text:
        r = rng.random()
        if ch in _SHORT and r < 0.8:
            parts.append(_SHORT[ch])
        elif ch == "/" and r < 0.5:
            parts.append("\\/")
        elif r < 0.3 or (ch < " " and r < 0.95) or ch in '"\\':
            code = ord(ch)
            if code > 0xFFFF:
                code -= 0x10000
                pair = (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
                parts.append("".join(_escape(c, rng) for c in pair))
            else:
                parts.append(_escape(code, rng))
        else:
            parts.append(ch)
    parts.append('"')
    return "".join(parts)


def _escape(code: int, rng: random.Random) -> str:
    text = f"\\u{code:04x}"
    return text.upper().replace("\\U", "\\u") if rng.random() < 0.5 else text


def encode(text: str) -> bytes:
    # Raw lone surrogates have no UTF-8; as bytes they are invalid UTF-8.
    return text.encode("utf-8", "surrogatepass")


def mutate(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    i = rng.randrange(len(data))
    op = rng.randint(0, 3)
    if op == 0:
        return data[:i] + data[i + 1 :]
    if op == 1:
        return data[:i] + bytes([rng.randrange(256)]) + data[i:]
    if op == 2:
        return data[:i] + bytes([rng.choice(b'{}[]:,"\\ 0e-.')]) + data[i + 1 :]
    return data[:i]


def nested(depth: int, rng: random.Random) -> bytes:
    opens: list[str] = []
    closes: list[str] = []
    for _ in range(depth):
        kind = rng.randint(0, 2)
        opens.append(("[", '{"a":', '{"a":1,"a":')[kind])
        closes.append("]" if kind == 0 else "}")
    return ("".join(opens) + "0" + "".join(reversed(closes))).encode()


def bodies(rng: random.Random) -> Iterator[bytes]:
    """Bodies of every kind, from one seeded generator."""
    while True:
        value = gen_value(rng)
        style = rng.choice(["compact", "compact", "ascii", "spaced", "spaced"])
        data = encode(_space(rng, style) + write(value, rng, style) + _space(rng, style))
        r = rng.random()
        if r < 0.12:
            data = mutate(data, rng)
        elif r < 0.14:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 20)))
        elif r < 0.15:
            data = nested(rng.choice([100, 250, 253, 254, 255, 256, 300, 1023, 1024, 1100]), rng)
        yield data


# -- the tests --------------------------------------------------------------


def test_seeded_bodies_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(15)
    decided = 0
    total = 40_000
    gen = bodies(rng)
    for _ in range(total):
        decided += check(next(gen), monkeypatch)
    # Not vacuous: the fast reader answers for a good share of them.
    assert decided > total // 4


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_generated_bodies_agree(rng: random.Random) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        gen = bodies(rng)
        for _ in range(5):
            check(next(gen), monkeypatch)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec=None, exclude_categories=())),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(st.characters(exclude_categories=()), max_size=3), children, max_size=4
        )
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(
    json_values, st.sampled_from(["compact", "ascii", "spaced"]), st.randoms(use_true_random=False)
)
def test_hypothesis_values_agree(value: object, style: str, rng: random.Random) -> None:
    def convert(v: object) -> object:
        if isinstance(v, dict):
            return Obj((k, convert(x)) for k, x in v.items())
        if isinstance(v, list):
            return [convert(x) for x in v]
        return v

    with pytest.MonkeyPatch.context() as monkeypatch:
        check(encode(write(convert(value), rng, style)), monkeypatch)


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1,"a":2}',
        b'{"a":1,"\\u0061":2}',
        b'{"a":"x","a":"\\u003a"}',
        b'{"a":1,"a":"\\u003A"}',
        b'{"a:b":1,"a:b":1}',
        b'{"a":{"b":1,"b":1}}',
        b'[{"k":":"},{"k":1,"k":1}]',
        b'{"a":"\\u003a\\u0022\\u0022","a":1}',
        b'{"x":18446744073709551616}',
        b'{"x":-9223372036854775809}',
        b'{"x":' + b"9" * 4301 + b"}",
        b'{"x":1e400}',
        b'{"x":-0}',
        b'{"x":-0.0}',
        b'{"x":NaN}',
        b'{"x":"\\ud800"}',
        b'{"x":"\\ud83d\\ude00"}',
        b'"\xed\xa0\x80"',
        b'"\xff"',
        b"[" * 255 + b"]" * 255,
        b"[" * 1100 + b"]" * 1100,
        b"",
        b" ",
        b"\xef\xbb\xbf{}",
    ],
)
def test_known_hazards_agree(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    check(data, monkeypatch)


def test_duplicates_are_refused_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    # A dropped member's colon balanced by an escaped colon elsewhere: the
    # count alone would miss it, the escape check does not.
    assert CODEC is not None
    for data in (b'{"a":1,"a":"\\u003a"}', b'{"a": 1, "b": "\\u003a", "a": 2}'):
        assert outcome(data, CODEC, monkeypatch)[:2] == ("refused", "invalid_json")
        assert jsontext.fast_loads(data, CODEC) is jsontext.UNDECIDED


def test_sdk_bodies_take_the_fast_path() -> None:
    # What httpx, the OpenAI SDK and JSON.stringify send: compact, raw UTF-8.
    assert CODEC is not None
    payload = {"model": "m", "messages": [{"role": "user", "content": "héllo: 😀\n"}], "t": 0.7}
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    assert same(jsontext.fast_loads(data, CODEC), payload)
    spaced = json.dumps(payload).encode()
    assert same(jsontext.fast_loads(spaced, CODEC), payload)


def test_loads_utf8_raises_what_decoding_raises() -> None:
    with pytest.raises(UnicodeDecodeError) as info:
        jsontext.loads_utf8(b'{"a":"\xff"}')
    assert info.value.start == 6


@pytest.mark.parametrize(("setting", "absent"), [("1", True), ("0", False), ("", False)])
def test_the_environment_hides_orjson(setting: str, absent: bool) -> None:
    # Read once, at import: a fresh interpreter sees the setting.
    env = {**os.environ, fastjson.DISABLE_ENV: setting}
    probe = "from gateway import fastjson; print(fastjson.CODEC is None)"
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(absent)
