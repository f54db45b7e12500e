"""JSON read strictly, so that what the gateway scans is what every upstream reads.

Parsers disagree on duplicate keys (first wins or last wins): if ours and the
upstream's disagree, text never scanned would reach the model, so they are
refused. Python also reads ``NaN`` and ``Infinity``, and ``1e999`` as
infinity, where JSON and the upstreams do not: refused too. Error messages
name the problem, never the content.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable
from random import getrandbits
from typing import Final, Protocol

from gateway import compiled, fastjson


class JSONTextError(ValueError):
    """Not JSON that every reader reads alike; the message says why, without content."""


class DuplicateKey(JSONTextError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise DuplicateKey("a JSON object has a duplicate key")
    return out


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JSONTextError("a number too large for a double (it would read as infinity)")
    return value


def _no_constant(name: str) -> object:
    raise JSONTextError(f"{name} is not a JSON value")


_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_unique_keys, parse_float=_finite, parse_constant=_no_constant
)


def loads(text: str) -> object:
    try:
        return _DECODER.decode(text)
    except JSONTextError:
        raise
    except RecursionError as exc:
        raise JSONTextError("JSON nesting is too deep") from exc
    except json.JSONDecodeError as exc:
        raise JSONTextError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except ValueError as exc:
        # The one left is int(): Python reads at most 4300 digits (CVE-2020-10735).
        raise JSONTextError("a number has too many digits") from exc


# -- the fast reader --------------------------------------------------------
#
# orjson reads JSON several times faster than the decoder above, but keeps the
# last of duplicate keys without a word, and reads an integer past 64 bits as
# a float. Its answer is used only when it is provably the value loads() would
# return; otherwise loads() decides, so every outcome (the value, or the error
# and its message) is the stdlib path's. tests/wire/test_json_differential.py
# holds the two to that.
#
# What orjson refuses goes to loads(): invalid JSON or UTF-8, NaN, Infinity
# and numbers that overflow a double, lone surrogate escapes. What it accepts
# is proven by three checks on its value, made in one walk of it:
#
# 1. No member lost to a duplicate: counting ':' bytes. In JSON text a ':'
#    byte is either an object member's separator or a character of a string
#    (UTF-8 never uses 0x3A inside a multi-byte character; no number or
#    literal has one). A string's ':' characters are its ':' bytes, except
#    those spelled \u003a, which the body is checked not to have. So the
#    value's members plus the ':' characters of its strings (keys included)
#    come to the body's ':' bytes unless members were lost, and each member
#    lost to a later duplicate takes its separator (and maybe more) with it:
#    equal counts mean no key repeats. (orjson.dumps writes exactly one ':'
#    per member and a string's ':' as they are: the count is that of the
#    value written back, without writing it.)
#
# 2. No integer read as a float: orjson reads an integer outside
#    [-2**63, 2**64) as a float, which is then at least 2**63 in size, so a
#    value holding such a float goes to loads(). Smaller floats came from
#    float tokens, and orjson and Python's float() both round correctly.
#
# 3. Nesting no deeper than orjson.dumps writes (254 levels), which keeps
#    the fast path far from Python's recursion limit in what walks the value.


class _Undecided:
    __slots__ = ()


UNDECIDED: Final = _Undecided()

# The escape of ':' in either case, and a few neighbours (the escapes of
# digits and ;<=>?, which no serialiser needs): those bodies go to loads().
_COLON_ESCAPES: Final = b"\\u003"
_MAX_DEPTH: Final = 254
_WIDE: Final = 2.0**63


def fast_loads(data: bytes, codec: fastjson.Codec) -> object:
    """What ``loads(data.decode())`` returns, when orjson proves it; else UNDECIDED."""
    try:
        value = codec.loads(data)
    except ValueError:
        return UNDECIDED
    return value if _proven(data, value) else UNDECIDED


def _py_proven(data: bytes, value: object) -> bool:
    """The three checks above; `_colons.proven` in C."""
    if _COLON_ESCAPES in data:
        return False
    count = _value_colons(value, 0)
    return count >= 0 and count == data.count(b":")


def _value_colons(value: object, depth: int) -> int:
    """Members plus ':' characters in ``value``, or -1 when it is not proven."""
    if type(value) is str:
        return value.count(":")
    if type(value) is dict:
        if depth >= _MAX_DEPTH:
            return -1
        total = len(value)
        for key, item in value.items():
            inner = _value_colons(item, depth + 1)
            if type(key) is not str or inner < 0:
                return -1
            total += key.count(":") + inner
        return total
    if type(value) is list:
        if depth >= _MAX_DEPTH:
            return -1
        total = 0
        for item in value:
            inner = _value_colons(item, depth + 1)
            if inner < 0:
                return -1
            total += inner
        return total
    if type(value) is float:
        return -1 if abs(value) >= _WIDE else 0
    return 0 if value is None or type(value) in (int, bool) else -1


def _load_proof() -> Callable[[bytes, object], bool]:
    module = compiled.load("gateway.wire._colons")
    return _py_proven if module is None else module.proven


_proven: Final = _load_proof()
_CODEC = fastjson.CODEC


def loads_utf8(data: bytes) -> object:
    """``loads(data.decode("utf-8"))``, faster when orjson is installed.

    The same value or the same exception, ``UnicodeDecodeError`` included.
    """
    if _CODEC is not None:
        split = _SPLIT
        if split is not None and len(data) >= _MEMO_FROM:
            value = _memo_loads(data, _CODEC, split)
            if value is not UNDECIDED:
                return value
        value = fast_loads(data, _CODEC)
        if value is not UNDECIDED:
            return value
    return loads(data.decode("utf-8"))


# -- the memo: a conversation's history is read once -------------------------
#
# An agent sends its whole conversation again on every turn. `_spans.split`
# finds, without parsing, the byte ranges (parts) of the long elements of a
# body's top-level "messages" array and of its other long top-level values
# (tool definitions, a system prompt), and looks each up in the memo: a
# part whose bytes were read before comes with its value. The other parts
# are parsed and proven one by one, as `fast_loads` proves a body. Then the
# skeleton (the body with each part replaced by a token: a random base,
# drawn for each body, plus the part's number) is parsed and proven, and
# each token must come back exactly where its part was: so the parts were
# exactly those values, and the body's value is the skeleton's with each
# token replaced by its part's value, since JSON's grammar is context free.
# (The base is random so that no value the body spells itself can pass for
# a token.) What the proofs check holds piece by piece: every ':' byte is
# in exactly one piece, and a part begins and ends with a bracket or a
# quote, so no "\u003" spans two. Anything else goes to `fast_loads`, and
# the outcome is always the one `loads` gives.
#
# A body whose parts are mostly new (a conversation seen for the first
# time, or one made of many distinct parts) is parsed whole instead, and its
# parts are remembered from that value once the skeleton has shown where
# they are: parsing many parts one by one costs far more than one parse.
#
# A part goes into the memo the second time it is seen, not the first
# (`_Memo.admit`): most parts sent once are never sent again.
#
# The memo hands the same objects to every request that repeats a part: the
# gateway reads a request's value and never changes it (redaction builds a
# new one). Repeated texts are then the same str objects, whose hash Python
# keeps, so the guard's per-text cache finds them without reading them.

# Bodies shorter than this are read whole: there is little to save.
_MEMO_FROM: Final = 1024
# Values shorter than this are not parts: the skeleton's parse reads them.
_PART_FROM: Final = 64
# Bounds on the memo: parts, and bytes of them in all.
_MEMO_PARTS: Final = 8192
_MEMO_BYTES: Final = 16 * 1024 * 1024
# Hashes of parts seen once that the memo remembers, at most (see `admit`).
_SEEN_ONCE: Final = 2 * _MEMO_PARTS
# At most this many new parts are parsed one by one; past it, the body whole.
_FEW_NEW: Final = 16
# At most this many parts of one body are remembered.
_REMEMBERED_PER_BODY: Final = _MEMO_PARTS // 4

# What `_spans.split` returns: (skeleton, values, keys, misses); see its doc.
_Parts = tuple[bytes, list[object], list[int | str], list[tuple[int, int, int, int]]]


class _Split(Protocol):
    def __call__(
        self, body: bytes, least: int, memo: dict[int, tuple[bytes, object]], base: int, /
    ) -> _Parts | None: ...


class _Memo:
    """Parts by hash, first in first out past its bounds.

    A plain dict, which `_spans.split` reads faster than an OrderedDict, and
    the order of arrival in a deque beside it: evicting a dict's first key
    with `next(iter(...))` walks the slots earlier deletions left empty.
    """

    __slots__ = ("bytes", "once", "order", "parts")

    def __init__(self) -> None:
        self.parts: dict[int, tuple[bytes, object]] = {}
        self.order: deque[int] = deque()
        self.bytes = 0
        self.once: set[int] = set()

    def admit(self, digest: int) -> bool:
        """Whether a part the memo lacks goes in: on its second sighting, not its first.

        Many parts are never sent again (a one-off request, the last turn of a
        conversation). Kept, each would hold its bytes and its value for
        thousands of requests and be freed long after, cold: under load that
        memory traffic cost more than the memo saved. A part of a
        conversation's history is sent on every turn, so it is parsed one
        time more and then remembered. The hashes seen once are forgotten
        all together when there are too many: a part then waits one more
        sighting, nothing else.
        """
        once = self.once
        if digest in once:
            once.discard(digest)
            return True
        if len(once) >= _SEEN_ONCE:
            once.clear()
        once.add(digest)
        return False

    def put(self, digest: int, raw: bytes, value: object) -> None:
        parts = self.parts
        old = parts.get(digest)
        if old is not None:
            # A part that collides with another takes its place and its turn.
            self.bytes -= len(old[0])
        else:
            self.order.append(digest)
        parts[digest] = (raw, value)
        self.bytes += len(raw)
        while len(parts) > _MEMO_PARTS or self.bytes > _MEMO_BYTES:
            self.bytes -= len(parts.pop(self.order.popleft())[0])

    def clear(self) -> None:
        self.parts.clear()
        self.order.clear()
        self.bytes = 0
        self.once.clear()


_MEMO: Final = _Memo()


def _memo_loads(data: bytes, codec: fastjson.Codec, split: _Split) -> object:
    """What ``fast_loads(data, codec)`` returns, with repeated parts from the memo."""
    base = getrandbits(61)
    found = split(data, _PART_FROM, _MEMO.parts, base)
    if found is None:
        return UNDECIDED
    skeleton, values, keys, misses = found
    if len(misses) > _FEW_NEW:
        return _remembered_whole(data, codec, skeleton, keys, misses, base)
    for number, start, end, digest in misses:
        raw = data[start:end]
        try:
            value = codec.loads(raw)
        except ValueError:
            return UNDECIDED
        if not _proven(raw, value):
            return UNDECIDED
        values[number] = value
        if end - start <= _MEMO_BYTES // 16 and _MEMO.admit(digest):
            _MEMO.put(digest, raw, value)
    top = _skeleton(skeleton, keys, base, codec)
    if top is None:
        return UNDECIDED
    messages = top["messages"]
    assert type(messages) is list  # checked by _skeleton
    for number, key in enumerate(keys):
        if isinstance(key, int):
            messages[key] = values[number]
        else:
            top[key] = values[number]
    return top


def _remembered_whole(
    data: bytes,
    codec: fastjson.Codec,
    skeleton: bytes,
    keys: list[int | str],
    misses: list[tuple[int, int, int, int]],
    base: int,
) -> object:
    """``fast_loads(data, codec)``, and the new parts remembered from its value."""
    value = fast_loads(data, codec)
    if type(value) is not dict or _skeleton(skeleton, keys, base, codec) is None:
        return value
    messages = value["messages"]
    assert type(messages) is list  # the skeleton's is, and the parts are values
    for number, start, end, digest in misses[:_REMEMBERED_PER_BODY]:
        if end - start <= _MEMO_BYTES // 16 and _MEMO.admit(digest):
            key = keys[number]
            part = messages[key] if isinstance(key, int) else value[key]
            _MEMO.put(digest, data[start:end], part)
    return value


def _skeleton(
    skeleton: bytes, keys: list[int | str], base: int, codec: fastjson.Codec
) -> dict[str, object] | None:
    """The skeleton's value when it is proven and holds each token where its part was."""
    try:
        top = codec.loads(skeleton)
    except ValueError:
        return None
    if type(top) is not dict or not _proven(skeleton, top):
        return None
    messages = top.get("messages")
    if type(messages) is not list:
        return None
    for number, key in enumerate(keys):
        if isinstance(key, int):
            if key >= len(messages) or not _is_token(messages[key], base + number):
                return None
        elif not _is_token(top.get(key), base + number):
            return None
    return top


def _is_token(value: object, token: int) -> bool:
    # type() rather than isinstance: True == 1.
    return type(value) is int and value == token


def _load_split() -> _Split | None:
    module = compiled.load("gateway.wire._spans")
    return None if module is None else module.split


# Not Final: `bench conversation` sets it to None to time the reader without the memo.
_SPLIT: _Split | None = _load_split()
