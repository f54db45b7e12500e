"""The JSON reader's memo of repeated parts (`jsontext._memo_loads`, `_spans.split`).

An agent resends its conversation on every turn; the reader takes the parts
it has read before (the elements of "messages", long top-level values) from
a memo and parses the rest. Whatever the memo holds, the outcome must be the
strict stdlib reader's: the same value, key order and types included, or the
same refusal. These tests hold it to that on conversations whose parts
repeat, shift, reappear inside strings, collide in the memo and are damaged;
and hold the C scan to a Python reference of it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest

from gateway import fastjson
from gateway.wire import _spans, jsontext
from tests.wire.test_json_differential import (
    Obj,
    check,
    encode,
    gen_value,
    mutate,
    same,
    write,
)

CODEC = fastjson.orjson_codec()
pytestmark = pytest.mark.skipif(CODEC is None, reason="orjson is not installed")
split = _spans.split
# A base for the tokens where a test reads the skeleton back.
BASE = 2**60 + 12345


@pytest.fixture(autouse=True)
def fresh_memo() -> Iterator[None]:
    """Each test starts from an empty memo and leaves none behind."""
    jsontext._MEMO.clear()
    yield
    jsontext._MEMO.clear()


def memo_outcome(data: bytes) -> object:
    """What the memo path alone makes of `data`: a value, or UNDECIDED."""
    assert CODEC is not None
    return jsontext._memo_loads(data, CODEC, split)


def strict(data: bytes) -> object:
    return jsontext.loads(data.decode("utf-8"))


# -- a Python reference of the scan --------------------------------------------


def reference_parts(data: bytes, least: int) -> list[tuple[int, int, int | str]] | None:
    """(start, end, key) of each part, as `_spans.split` finds them, or None: key is
    an element's position in "messages", or a member's key."""
    n = len(data)
    space = b" \t\n\r"

    def skip_space(i: int) -> int:
        while i < n and data[i] in space:
            i += 1
        return i

    def skip_value(i: int) -> int:
        if i >= n:
            return -1
        c = data[i : i + 1]
        if c == b'"':
            return skip_string_from(i + 1)
        if c in (b"{", b"["):
            depth = 0
            while i < n:
                c = data[i : i + 1]
                if c == b'"':
                    i = skip_string_from(i + 1)
                    if i < 0:
                        return -1
                    continue
                if c in (b"{", b"["):
                    depth += 1
                elif c in (b"}", b"]"):
                    depth -= 1
                    if depth == 0:
                        return i + 1
                i += 1
            return -1
        start = i
        while (
            i < n
            and data[i : i + 1] not in (b",", b"}", b"]", b'"', b"{", b"[")
            and (data[i] not in space)
        ):
            i += 1
        return i if i > start else -1

    def skip_string_from(start: int) -> int:
        # The string opened just before `start`: backslashes are counted back
        # to the string's first byte at most.
        i = start
        while True:
            j = data.find(b'"', i)
            if j < 0:
                return -1
            k = j
            while k > start and data[k - 1] == 0x5C:
                k -= 1
            if (j - k) % 2 == 0:
                return j + 1
            i = j + 1

    parts: list[tuple[int, int, int | str]] = []
    seen = False
    i = skip_space(0)
    if i >= n or data[i : i + 1] != b"{":
        return None
    i = skip_space(i + 1)
    while i < n:
        if data[i : i + 1] != b'"':
            return None
        key_end = skip_string_from(i + 1)
        if key_end < 0:
            return None
        key = data[i + 1 : key_end - 1]
        i = skip_space(key_end)
        if i >= n or data[i : i + 1] != b":":
            return None
        i = skip_space(i + 1)
        if key == b"messages":
            if seen or i >= n or data[i : i + 1] != b"[":
                return None
            seen = True
            i = skip_space(i + 1)
            if i < n and data[i : i + 1] == b"]":
                i += 1
            else:
                position = 0
                while True:
                    end = skip_value(i)
                    if end < 0:
                        return None
                    if end - i >= least:
                        parts.append((i, end, position))
                    position += 1
                    i = skip_space(end)
                    if i >= n:
                        return None
                    if data[i : i + 1] == b"]":
                        i += 1
                        break
                    if data[i : i + 1] != b",":
                        return None
                    i = skip_space(i + 1)
        else:
            start = i
            i = skip_value(i)
            if (
                i >= 0
                and b"\\" not in key
                and i - start >= least
                and data[start : start + 1] in (b"{", b"[", b'"')
            ):
                try:
                    parts.append((start, i, key.decode("utf-8")))
                except UnicodeDecodeError:
                    return None
            if i < 0:
                return None
        i = skip_space(i)
        if i >= n:
            return None
        if data[i : i + 1] == b"}":
            return parts if skip_space(i + 1) == n and seen and parts else None
        if data[i : i + 1] != b",":
            return None
        i = skip_space(i + 1)
    return None


def c_parts(data: bytes, least: int) -> list[tuple[int, int, int | str]] | None:
    """The C scan's parts, read back from its skeleton and its misses (memo empty)."""
    found = split(data, least, {}, BASE)
    if found is None:
        return None
    skeleton, values, keys, misses = found
    assert all(v is None for v in values)
    assert [m[0] for m in misses] == list(range(len(keys)))
    parts = [(start, end, key) for (_, start, end, _), key in zip(misses, keys, strict=True)]
    # The skeleton is the body with each part replaced by its token.
    rebuilt = b""
    done = 0
    for number, (start, end, _) in enumerate(parts):
        rebuilt += data[done:start] + str(BASE + number).encode()
        done = end
    assert skeleton == rebuilt + data[done:]
    return parts


# -- conversations ------------------------------------------------------------


def message(rng: random.Random) -> object:
    """A message: mostly an SDK-shaped one, sometimes anything at all."""
    r = rng.random()
    if r < 0.08:
        return gen_value(rng)
    role = rng.choice(["system", "user", "assistant", "tool"])
    text = "".join(rng.choice('ab:{}[]",\\ \n\té€😀') for _ in range(rng.randint(40, 200)))
    if r < 0.2:
        # The bytes of another message, as text: never to be taken for one.
        text = json.dumps({"role": "user", "content": text})
    members = Obj([("role", role), ("content", text)])
    if rng.random() < 0.1:
        members.append((rng.choice(["role", "content", "name"]), text[:10]))
    return members


def conversation_body(rng: random.Random, pool: list[object], style: str) -> bytes:
    n = rng.randint(0, 8)
    messages = [rng.choice(pool) for _ in range(n)]
    members = Obj([("model", "gpt-4o"), ("messages", messages)])
    if rng.random() < 0.3:
        members.append(("tools", [gen_value(rng) for _ in range(3)]))
    if rng.random() < 0.2:
        members.insert(0, ("system", "x" * rng.randint(50, 120)))
    if rng.random() < 0.05:
        # A second messages member, spelled plainly or with an escape.
        members.append((rng.choice(["messages", "messag\\u0065s"]), messages[:1]))
    if rng.random() < 0.1:
        members.append(("stream", rng.choice([True, False, 0, 1])))
    return encode(write(members, rng, style))


def bodies(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    pool = [message(rng) for _ in range(24)]
    out: list[bytes] = []
    for _ in range(count):
        style = rng.choice(["compact", "ascii", "spaced"])
        data = conversation_body(rng, pool, style)
        r = rng.random()
        if r < 0.15:
            data = mutate(data, rng)
        elif r < 0.2 and out:
            # An earlier body's bytes spliced in: parts seen before, in a new place.
            other = rng.choice(out)
            at = rng.randrange(len(data) + 1)
            cut = rng.randrange(len(other) + 1)
            data = data[:at] + other[cut : cut + rng.randint(1, 400)] + data[at:]
        out.append(data)
    return out


# -- the tests ---------------------------------------------------------------


def test_c_scan_matches_the_reference() -> None:
    found = 0
    for data in bodies(7, 4000):
        for least in (0, 64):
            reference = reference_parts(data, least)
            assert c_parts(data, least) == reference, data[:200]
            found += reference is not None
    # Not vacuous: most conversations are shaped as the scan takes them.
    assert found > 3000


def test_conversations_read_as_the_stdlib_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every body three times (the second read remembers its parts, the third
    finds them in the memo), through the gateway's reader, against the stdlib's."""
    decided = hits = 0
    for data in bodies(11, 5000):
        for read in range(3):
            before = len(jsontext._MEMO.parts)
            value = memo_outcome(data)
            if value is not jsontext.UNDECIDED:
                decided += 1
                assert same(value, strict(data)), data[:200]
                hits += read == 2 and len(jsontext._MEMO.parts) == before
            check(data, monkeypatch)
    # Not vacuous: many bodies are read by the memo (the rest hold what only the
    # stdlib path reads: "\\u003a", duplicate keys, ...), many of them from it alone.
    assert decided > 2000
    assert hits > 1000


def test_a_repeated_part_is_one_object() -> None:
    history = [{"role": "user", "content": "tell me about " + "x" * 100}]
    first = json.dumps({"model": "m", "messages": [*history, {"role": "user", "content": "a"}]})
    second = json.dumps({"model": "m", "messages": [*history, {"role": "user", "content": "b"}]})
    memo_outcome(first.encode())
    a = memo_outcome(first.encode())
    b = memo_outcome(second.encode())
    assert isinstance(a, dict) and isinstance(b, dict)
    assert a == json.loads(first) and b == json.loads(second)
    assert a["messages"][0] is b["messages"][0]
    assert a["messages"][0]["content"] is b["messages"][0]["content"]
    # The parts that differ are read anew.
    assert a["messages"][1] is not b["messages"][1]


def test_a_part_inside_a_string_is_not_taken_for_one() -> None:
    part = {"role": "user", "content": "secret-free text " * 8}
    seen = json.dumps({"messages": [part]}).encode()
    for _ in range(2):
        assert memo_outcome(seen) == {"messages": [part]}
    assert len(jsontext._MEMO.parts) == 1
    # The same bytes again, now the content of another message.
    quoted = json.dumps(json.dumps(part))[1:-1]
    tricky = ('{"messages": [{"role": "tool", "content": "' + quoted + '"}]}').encode()
    assert memo_outcome(tricky) == json.loads(tricky)
    # And as raw bytes inside a string whose quotes are escaped around it.
    raw = json.dumps(part)
    inside = '{"messages": [{"role": "tool", "content": "\\"' + "x" * 70 + '"}, ' + raw + "]}"
    assert memo_outcome(inside.encode()) == json.loads(inside)


def test_a_colliding_entry_is_not_taken() -> None:
    """A memo entry under a part's hash with other bytes is ignored: only equal bytes count."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "y" * 200}]})
    data = body.encode()
    found = split(data, 64, {}, 0)
    assert found is not None
    (_, start, end, digest) = found[3][0]
    impostor = data[start:end].replace(b"y", b"z")
    jsontext._MEMO.put(digest, impostor, {"role": "user", "content": "forged"})
    value = memo_outcome(data)
    assert value == json.loads(body)


def test_a_damaged_body_gets_the_stdlib_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    history = [{"role": "user", "content": "q" * 100}, {"role": "assistant", "content": "r" * 90}]
    good = json.dumps({"model": "m", "messages": history}).encode()
    for _ in range(2):
        assert memo_outcome(good) == json.loads(good)
    assert len(jsontext._MEMO.parts) == 2
    damaged = [
        good[:-1],  # truncated
        good.replace(b'"model"', b'"messages"', 1),  # a second messages member
        good.replace(b'"model": "m"', b'"messages": 1'),
        good.replace(b'"model": "m"', b'"stream": true, "stream": false'),  # duplicate key
        good + b" x",
        good.replace(b"]}", b"]]}"),
        good.replace(b'{"role": "assistant"', b'{"role": "assistant", "role": "user"'),
        good.replace(b'"q', b'"\\ud800q'),  # a lone surrogate inside a remembered part
    ]
    for data in damaged:
        check(data, monkeypatch)
        value = memo_outcome(data)
        if value is not jsontext.UNDECIDED:
            assert same(value, strict(data))


def test_the_memo_is_bounded() -> None:
    memo = jsontext._MEMO
    for i in range(jsontext._MEMO_PARTS + 100):
        memo.put(i, b"x" * 64, i)
    assert len(memo.parts) == len(memo.order) == jsontext._MEMO_PARTS
    big = b"y" * (jsontext._MEMO_BYTES // 16)
    for i in range(40):
        memo.put(10**9 + i, big, i)
    assert memo.bytes <= jsontext._MEMO_BYTES
    assert memo.bytes == sum(len(raw) for raw, _ in memo.parts.values())
    assert sorted(memo.order) == sorted(memo.parts)
    # A part put again under its hash replaces the entry, once.
    memo.put(10**9 + 39, b"z" * 64, "again")
    assert memo.parts[10**9 + 39] == (b"z" * 64, "again")
    assert sorted(memo.order) == sorted(memo.parts)


def test_a_part_is_remembered_on_its_second_sighting() -> None:
    """A part sent once is not kept: most are never sent again."""
    once = {"role": "tool", "content": "output " * 20}
    again = {"role": "user", "content": "question " * 20}
    bodies_ = [json.dumps({"messages": [m, again]}).encode() for m in (once, {"n": "x" * 70})]
    assert memo_outcome(bodies_[0]) == json.loads(bodies_[0])
    assert not jsontext._MEMO.parts
    # `again` is seen the second time: remembered, and taken from then on.
    second = memo_outcome(bodies_[1])
    assert isinstance(second, dict)
    assert [raw for raw, _ in jsontext._MEMO.parts.values()] == [json.dumps(again).encode()]
    third = memo_outcome(bodies_[0])
    assert isinstance(third, dict) and third["messages"][1] is second["messages"][1]
    assert len(jsontext._MEMO.parts) == 2


def test_the_hashes_seen_once_are_bounded() -> None:
    memo = jsontext._MEMO
    for i in range(jsontext._SEEN_ONCE):
        assert not memo.admit(i)
    assert len(memo.once) == jsontext._SEEN_ONCE
    # Full: they are forgotten together, and the newest is the one kept.
    assert not memo.admit(-1)
    assert memo.once == {-1}
    assert not memo.admit(0)
    assert memo.admit(-1)
    assert memo.once == {0}


def test_split_refuses_what_is_not_a_conversation() -> None:
    for data in [
        b"[]",
        b'{"model": "m"}',
        b'{"messages": {}}',
        b'{"messages": [1, 2]',
        b'{"messages": [1, 2]} trailing',
        b'{"messages": [1, 2], "messages": [3]}',
        b'"messages"',
    ]:
        assert split(data, 0, {}, 0) is None, data
    assert split(b'{"messages": []}', 0, {}, 0) is None  # nothing to remember
    # Short elements are left in the skeleton: a body of them has no parts.
    assert split(b'{"messages": [' + b",".join([b"0"] * 1000) + b"]}", 64, {}, 0) is None
    with pytest.raises(TypeError):
        split("text", 0, {}, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        split(b'{"messages": [1]}', 0, {}, 2**62)


def lying(parts: list[tuple[int, int, int | str]]) -> jsontext._Split:
    """A scan that reports `parts`, wherever they are, with the reader's tokens."""

    def fake(body: bytes, least: int, memo: object, base: int) -> jsontext._Parts:
        skeleton, done = b"", 0
        for number, (start, end, _) in enumerate(parts):
            skeleton += body[done:start] + str(base + number).encode()
            done = end
        misses = [(n, s, e, n) for n, (s, e, _) in enumerate(parts)]
        return skeleton + body[done:], [None] * len(parts), [k for _, _, k in parts], misses

    return fake


def test_parts_that_are_not_where_the_scan_said_are_caught() -> None:
    """The reader trusts no scan: a part it was told of that is not exactly an
    element (or member value) in the body leaves the body to the full reader."""
    assert CODEC is not None
    data = b'{"messages": ["xx{}yy", {"k": 1}], "tools": [1]}'
    inside = data.index(b"{}")
    first = data.index(b'"xx')
    element = data.index(b'{"k"')
    tools = data.index(b"[1]")
    wrong: list[list[tuple[int, int, int | str]]] = [
        # Inside a string: the token comes back as text.
        [(inside, inside + 2, 0), (element, element + 8, 1)],
        # At another position than the one it was said to hold.
        [(element, element + 8, 0)],
        # An element called a member's value, and the other way round.
        [(first, first + 8, 0), (element, element + 8, "tools")],
        [(first, first + 8, 0), (element, element + 8, 1), (tools, tools + 3, 2)],
    ]
    for parts in wrong:
        assert jsontext._memo_loads(data, CODEC, lying(parts)) is jsontext.UNDECIDED, parts
    # A value the body spells itself cannot pass for a token: here the element
    # after the string is the number 0, the token the part inside the string
    # would have had if tokens were the parts' numbers.
    spelled = b'{"messages": ["xx{}yy", 0]}'
    at = spelled.index(b"{}")
    found = jsontext._memo_loads(spelled, CODEC, lying([(at, at + 2, 1)]))
    assert found is jsontext.UNDECIDED
    honest: list[tuple[int, int, int | str]] = [
        (first, first + 8, 0),
        (element, element + 8, 1),
        (tools, tools + 3, "tools"),
    ]
    assert jsontext._memo_loads(data, CODEC, lying(honest)) == json.loads(data)
    # A short element may stay in the skeleton.
    assert jsontext._memo_loads(data, CODEC, lying(honest[1:])) == json.loads(data)


def test_a_body_of_many_new_parts_is_read_whole_and_remembered() -> None:
    """Past a few new parts the body is parsed whole (one parse, not hundreds),
    and its parts are remembered from that value the second time; the next turn
    takes them."""
    history = [{"role": "user", "content": f"step {i}: " + "w" * 80} for i in range(300)]
    first = json.dumps({"model": "m", "messages": history}).encode()
    assert memo_outcome(first) == json.loads(first)
    assert not jsontext._MEMO.parts
    value = memo_outcome(first)
    assert value == json.loads(first)
    assert isinstance(value, dict)
    assert len(jsontext._MEMO.parts) == 300
    second = json.dumps({"model": "m", "messages": [*history, {"role": "user", "content": "go"}]})
    again = memo_outcome(second.encode())
    assert again == json.loads(second)
    assert isinstance(again, dict)
    assert all(a is b for a, b in zip(again["messages"], value["messages"], strict=False))


def test_many_parts_a_scan_misplaced_are_not_remembered() -> None:
    assert CODEC is not None
    texts = [f"{{}} text {i} " + "v" * 70 for i in range(jsontext._FEW_NEW + 4)]
    data = json.dumps({"messages": texts}).encode()
    # Each part said to be the "{}" inside a string, at the string's position.
    parts: list[tuple[int, int, int | str]] = []
    at = 0
    for position in range(len(texts)):
        at = data.index(b"{}", at)
        parts.append((at, at + 2, position))
        at += 2
    # Seen once already (the lying scan's hashes are the parts' numbers), so
    # only the skeleton's check keeps them out.
    for number in range(len(parts)):
        assert not jsontext._MEMO.admit(number)
    assert jsontext._memo_loads(data, CODEC, lying(parts)) == json.loads(data)
    assert not jsontext._MEMO.parts
