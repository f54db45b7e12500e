"""Every string in any JSON value, and the walking machinery the provider adapters share.

``segments`` is the adapter for every path without a dedicated one (embeddings,
moderations, ...): it returns every string with role ``unknown``.

The provider adapters describe their typed objects (content parts, blocks,
items) with a :class:`Spec` per ``type`` and let the walkers here do the rest,
so a field the SDKs add tomorrow is scanned by default rather than skipped.

Every string the client controls leaves the gateway, so every one is a
segment, with one exception: a member of the fixed vocabulary of the provider
APIs (:mod:`gateway.wire.vocabulary`: field names, enum values such as
``auto`` or a registered ``type``, and the known message roles). Such a
string is a constant of the API and cannot be a secret; leaving it out keeps
a turn's segment list short. Everything else is scanned:

- values of :data:`STRUCTURAL` keys (enums, identifiers, ``model``, provider
  ciphertext and signatures echoed back) and of keys a Spec names ``opaque``
  are OPAQUE segments: the secret floor reads them, the injection check does
  not, since the model does not read them as instructions.
- object keys outside the vocabulary are OPAQUE segments of their own, or
  UNTRUSTED where the object came from outside (a tool result), since the
  model reads those. An unknown role or item type is UNTRUSTED text too: a
  custom role reaches the chat template.
- a string member whose key could name a secret (``password``, ``api_key``)
  is also judged as the pair ``"key": "value"``, so the floor's assignment
  rules see the name as context; so are ``{"name": ..., "value": ...}``
  objects, and the members of JSON written inside a string (tool-call
  ``arguments``), parsed within bounds.
- a token split across the text parts of one content list, or across the
  string leaves of one tool call's arguments, is found in one more OPAQUE
  segment that joins them.
- ``data:`` URLs and the base64 fields a Spec names are read by
  :mod:`gateway.wire.blobs`: decoded, and a real media file of its declared
  type skipped but for its metadata. Empty strings are not segments.

Object keys appear verbatim in paths only when they are field names or plain
names (:func:`is_plain_key`); any other key is replaced by its position
(``parent.<value#N>``; the key itself is the segment ``parent.<key#N>``),
because paths end up in error messages and the audit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import islice, repeat
from json.encoder import encode_basestring_ascii
from types import MappingProxyType
from typing import Final, TypeGuard

from gateway.guard.detectors.secrets import names_secret
from gateway.wire import blobs, vocabulary
from gateway.wire.base import MAX_DEPTH, PayloadError, Segment, Trust
from gateway.wire.members import Members

ROLE_UNKNOWN: Final = "unknown"
# Request parameters outside the conversation: tool definitions, metadata, schemas.
ROLE_REQUEST: Final = "request"
ROLE_SYSTEM: Final = "system"

TRUSTED: Final = Trust.TRUSTED
UNTRUSTED: Final = Trust.UNTRUSTED
OPAQUE: Final = Trust.OPAQUE

STRUCTURAL: Final = frozenset(
    {
        # discriminators and enums the provider validates
        "type",
        "role",
        "status",
        "media_type",
        "format",
        "mode",
        "ttl",
        "syntax",
        "effort",
        "verbosity",
        "phase",
        "execution",
        "file_type",
        "error_code",
        "model",
        # identifiers
        "id",
        "call_id",
        "tool_call_id",
        "tool_use_id",
        "file_id",
        "caller_id",
        "approval_request_id",
        "container_id",
        # provider-made ciphertext and signatures, echoed back verbatim
        "encrypted_content",
        "encrypted_index",
        "encrypted_stdout",
        "signature",
    }
)

# Lists of enum values or of names that appear elsewhere as keys (JSON Schema
# `required`): OPAQUE while every element is a string.
STRUCTURAL_LISTS: Final = frozenset({"required", "include", "modalities"})

# The roles of the agent and its operator; tool results and unknown roles are untrusted.
ROLE_TRUST: Final[Mapping[object, Trust]] = MappingProxyType(
    {
        "system": TRUSTED,
        "developer": TRUSTED,
        "user": TRUSTED,
        "assistant": TRUSTED,
        "tool": UNTRUSTED,
        "function": UNTRUSTED,
    }
)

# Field names of the provider APIs and JSON Schema: the walkers test membership
# here first, which is most of a key's cost.
NAMES: Final = vocabulary.NAMES
# Enum values (and roles) that are left out where a value is an enum or an id.
WORDS: Final = vocabulary.WORDS | frozenset(k for k in ROLE_TRUST if isinstance(k, str))

# Bounds on what one request can make the adapters allocate: each string is a
# Segment with its own path, and both grow with the body's shape, not its size.
# Legitimate requests stay far below: a 2000-message agent conversation with
# tool calls is ~12k segments, and OpenAI takes at most 2048 embedding inputs.
MAX_SEGMENTS = 100_000
_PATH_MAX: Final = 256
_PATH_HEAD: Final = 64

_SHORT_NAME_MAX: Final = 24
_NAME_MAX: Final = 64
# Letters and digits this long without a separator are how tokens look (an AWS
# access key id is 20), not how names do.
_TOKEN_RUN: Final = 16
_PLAIN_TABLE: Final = str.maketrans("_-$", "aaa")
_SEPARATORS: Final = str.maketrans("_-$", "   ")

# JSON inside a string is parsed up to this size and this many strings deep;
# beyond, the string is still scanned as it was sent, where the floor reads a
# "key": "value" pair as well, unless escapes hide it. The adapters run on
# every turn and parse each resent tool result again: a large JSON output
# would cost milliseconds per request.
_EMBEDDED_MAX: Final = 64 * 1024
_EMBEDDED_NESTING: Final = 3
# A joined segment longer than this keeps only the text around each join.
_JOIN_MAX: Final = 64 * 1024
_JOIN_WINDOW: Final = 4096


# The field names that could name a secret (`prompt_cache_key`, `authorization`), found once.
SECRET_NAMES: Final = frozenset(name for name in NAMES if names_secret(name))


def _named(key: str) -> bool:
    if key in NAMES:
        return key in SECRET_NAMES
    return names_secret(key)


@dataclass(frozen=True, slots=True)
class Spec:
    """How to walk one ``type`` of provider object; keys not named here are walked normally."""

    # Keys whose subtree came from outside the agent's trust boundary.
    untrusted: frozenset[str] = frozenset()
    # Keys whose string value is an enum or opaque (an id, a fingerprint,
    # ciphertext), never text the model reads: an OPAQUE segment unless it is a
    # known word. Any other value there is walked normally.
    opaque: frozenset[str] = frozenset()
    # Keys whose string value is base64 or a data: URL: scanned as
    # gateway.wire.blobs reads it (decoded; a real media file but for its metadata).
    base64: frozenset[str] = frozenset()
    # Keys holding free-form JSON (tool inputs, anything typed `object` that came
    # from outside): every string, keys included, nothing structural.
    free: frozenset[str] = frozenset()
    # Keys holding a typed object or a list of them, where an unknown type is
    # scanned in full as untrusted.
    typed: frozenset[str] = frozenset()
    # Keys holding an untyped object that needs its own Spec.
    nested: Mapping[str, Spec] = field(default_factory=lambda: _EMPTY_NESTED)
    # Keys whose list value restates other text token by token (logprobs): one
    # segment for the whole list rather than one per token.
    tokens: frozenset[str] = frozenset()
    # Keys holding a tool call's arguments (free-form JSON, or JSON in a
    # string); ``arguments`` always does.
    args: frozenset[str] = frozenset()


def keys(*names: str) -> frozenset[str]:
    return frozenset(names)


_EMPTY_NESTED: Final[Mapping[str, Spec]] = MappingProxyType({})
PLAIN: Final = Spec()

Registry = Mapping[str, Spec]

_ARGUMENTS: Final = "arguments"


def segments(payload: object) -> list[Segment]:
    out: list[Segment] = []
    if isinstance(payload, str):
        add_string(out, payload, "$", ROLE_UNKNOWN, TRUSTED, None)
    else:
        walk_free(payload, "", ROLE_UNKNOWN, TRUSTED, None, out, 1)
    return out


def too_deep() -> PayloadError:
    return PayloadError(f"request body nests deeper than {MAX_DEPTH} levels")


# isinstance with a tuple is cheaper than with the union dict | list.
_CONTAINERS: Final = (dict, list)


def _bounded(path: str) -> str:
    """``path``, with its middle elided once it is long; the end says the most."""
    if len(path) <= _PATH_MAX:
        return path
    return f"{path[:_PATH_HEAD]}…{path[_PATH_HEAD - _PATH_MAX + 1 :]}"


def too_many() -> PayloadError:
    return PayloadError(f"request body has more than {MAX_SEGMENTS} text fields")


def _append(
    out: list[Segment], text: str, path: str, role: str, trust: Trust, index: int | None
) -> None:
    if len(out) >= MAX_SEGMENTS:
        raise too_many()
    out.append(Segment(path, role, text, trust, index))


# add_text and add_string are the commonest calls of a walk: each does its own
# append rather than call _append, a call per segment saved.


def add_text(
    out: list[Segment], text: str, path: str, role: str, trust: Trust, index: int | None
) -> None:
    if not text:
        return
    if text.startswith("data:"):
        _add_pieces(out, blobs.data_url_texts(text), path, role, trust, index)
        return
    if len(out) >= MAX_SEGMENTS:
        raise too_many()
    out.append(Segment(path, role, text, trust, index))


def add_base64(
    out: list[Segment],
    value: str,
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    declared: str | None = None,
) -> None:
    """A field that holds base64 or a data: URL (file data, audio, image sources).

    ``declared`` is the media type, format or file name the payload gives for it.
    """
    if value.startswith("data:"):
        add_text(out, value, path, role, trust, index)
    elif value:
        _add_pieces(out, blobs.base64_texts(value, declared), path, role, trust, index)


def _add_pieces(
    out: list[Segment],
    pieces: list[str],
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
) -> None:
    for n, piece in enumerate(pieces):
        if piece:
            _append(out, piece, path if n == 0 else f"{path}(decoded#{n})", role, trust, index)


# Sibling keys that declare what a base64 payload is.
_DECLARING_KEYS: Final = ("media_type", "mime_type", "mimeType", "format", "filename", "file_name")


def declared_type(obj: Mapping[str, object]) -> str | None:
    for key in _DECLARING_KEYS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def is_plain_key(key: str) -> bool:
    """A name that can go in a path verbatim; see the module docstring.

    ``[A-Za-z0-9_$-]``, at most 64 characters without a digit or 24 with one,
    and no run of 16 letters and digits between separators when it has one.
    """
    size = len(key)
    if not 0 < size <= _NAME_MAX or not key.isascii():
        return False
    if not (key.isalnum() or key.translate(_PLAIN_TABLE).isalnum()):
        return False
    if size < _TOKEN_RUN or not any(c.isdigit() for c in key):
        return True
    if size > _SHORT_NAME_MAX:
        return False
    return max(map(len, key.translate(_SEPARATORS).split()), default=0) < _TOKEN_RUN


def _key_trust(trust: Trust) -> Trust:
    # The model reads the keys of what came from outside like the rest of it.
    return UNTRUSTED if trust is UNTRUSTED else OPAQUE


def member_path(
    key: str,
    position: int,
    prefix: str,
    role: str,
    trust: Trust,
    index: int | None,
    out: list[Segment],
) -> str:
    """The path of the member ``key`` at ``position`` under ``prefix`` (a path and a dot, or "").

    A key outside the vocabulary is scanned as its own segment; one that is not
    a plain name is replaced by its position in the path.
    """
    if key in NAMES:
        return prefix + key
    add_text(out, key, f"{prefix}<key#{position}>", role, _key_trust(trust), index)
    if is_plain_key(key):
        return prefix + key
    return f"{prefix}<value#{position}>"


def add_pair(
    out: list[Segment], key: str, value: str, path: str, role: str, index: int | None
) -> None:
    """``key: value`` as one text, so the floor judges the value with its name as context."""
    text = encode_basestring_ascii(key) + ": " + encode_basestring_ascii(value)
    _append(out, text, path + "(pair)", role, OPAQUE, index)


_NAME_KEYS: Final = ("name", "key", "Name", "Key")


def _add_named_value(
    obj: Mapping[str, object], path: str, role: str, index: int | None, out: list[Segment]
) -> None:
    """``{"name": "DB_PASSWORD", "value": ...}`` (env lists, headers, tags) is a pair too."""
    value = obj.get("value", obj.get("Value"))
    if not isinstance(value, str) or not value:
        return
    for name_key in _NAME_KEYS:
        name = obj.get(name_key)
        if isinstance(name, str) and name and names_secret(name):
            add_pair(out, name, value, path, role, index)
            return


def add_joined(
    out: list[Segment], pieces: list[str], path: str, role: str, index: int | None
) -> None:
    """One OPAQUE segment of ``pieces`` joined, for a token split across them.

    Detectors check what precedes a token (``xghp_...`` is not a token), and in
    the join a piece's first character follows the previous piece's last: so
    each piece that follows a non-space is also read from its own start, a
    window per line. (The last piece is a segment of its own already.)
    """
    if len(pieces) < 2:
        return
    whole = "".join(pieces)
    lines = [whole if len(whole) <= _JOIN_MAX else _around_joins(pieces, whole)]
    budget = _JOIN_MAX
    at = 0
    for piece in islice(pieces, len(pieces) - 2):
        at += len(piece)
        if not piece[-1].isspace():
            line = whole[at : at + _JOIN_WINDOW]
            lines.append(line)
            budget -= len(line)
            if budget <= 0:
                break
    _append(out, "\n".join(lines), path, role, OPAQUE, index)


def _around_joins(pieces: list[str], joined: str) -> str:
    """The text within a window of each join, overlapping windows merged.

    A split token spans a join, and no token is longer than the window, so
    the rest of a long text adds nothing its own segments do not have.
    """
    regions: list[list[int]] = []
    at = 0
    for piece in pieces[:-1]:
        at += len(piece)
        start = max(at - _JOIN_WINDOW, 0)
        if regions and start <= regions[-1][1]:
            regions[-1][1] = at + _JOIN_WINDOW
        else:
            regions.append([start, at + _JOIN_WINDOW])
    return "\n".join(joined[start:end] for start, end in regions)


def _strings(value: object, into: list[str], depth: int, *, with_keys: bool) -> None:
    """Every string in ``value`` in order, object keys outside NAMES too when ``with_keys``."""
    if isinstance(value, str):
        if value:
            into.append(value)
    elif isinstance(value, dict):
        if depth > MAX_DEPTH:
            raise too_deep()
        for key, item in value.items():
            if with_keys and key and key not in NAMES:
                into.append(key)
            _strings(item, into, depth + 1, with_keys=with_keys)
    elif isinstance(value, list):
        if depth > MAX_DEPTH:
            raise too_deep()
        for item in value:
            _strings(item, into, depth + 1, with_keys=with_keys)


def add_nested(
    out: list[Segment],
    inner: list[Segment],
    prefix: str,
    index: int | None = None,
    *,
    strip: str = "",
) -> None:
    """The segments of a request inside this one, their paths under ``prefix``
    (``strip`` taken off their heads first).

    ``index``, when given, stands in for an inner segment that has none. The
    inner segments may be shared (see `Segment`): these are new ones.
    """
    if len(out) + len(inner) > MAX_SEGMENTS:
        raise too_many()
    for segment in inner:
        path = segment.path.removeprefix(strip) if strip else segment.path
        out.append(
            segment.moved(
                prefix + path if path != "$" else prefix.rstrip("."),
                index if segment.index is None else segment.index,
            )
        )


def add_opaque(out: list[Segment], value: str, path: str, role: str, index: int | None) -> None:
    """An enum value or an identifier: an OPAQUE segment unless it is a known word."""
    if value and value not in WORDS:
        _append(out, value, path, role, OPAQUE, index)


def _add_words(
    out: list[Segment], value: str | list[str], path: str, role: str, index: int | None
) -> None:
    """Enum values or names: OPAQUE segments, each unless it is in the vocabulary."""
    if isinstance(value, str):
        if value and value not in WORDS and value not in NAMES:
            _append(out, value, path, role, OPAQUE, index)
        return
    for i, word in enumerate(value):
        if word and word not in WORDS and word not in NAMES:
            _append(out, word, f"{path}[{i}]", role, OPAQUE, index)


def _add_tokens(
    out: list[Segment], value: list[object], path: str, role: str, index: int | None, depth: int
) -> None:
    """Logprobs: the tokens joined (the text again, so a token split across them is
    whole), then every other string, one per line."""
    tokens: list[str] = []
    rest: list[str] = []
    for entry in value:
        if isinstance(entry, dict):
            for key, item in entry.items():
                if key == "token" and isinstance(item, str):
                    tokens.append(item)
                else:
                    if key not in NAMES and key:
                        rest.append(key)
                    _strings(item, rest, depth + 1, with_keys=True)
        else:
            _strings(entry, rest, depth + 1, with_keys=True)
    text = "\n".join(["".join(tokens), *rest]).strip("\n")
    if text:
        _append(out, text, path, role, OPAQUE, index)


# -- JSON written inside a string --


# Members rather than a dict: with a duplicate key the tool may read either
# value, so both are judged (and building them is faster than a dict). The
# scanner itself, without decode()'s whitespace handling, halves a parse.
# (typeshed does not declare the decoder's scanner attribute.)
_SCAN: Callable[[str, int], tuple[object, int]]
_SCAN = json.JSONDecoder(object_pairs_hook=Members).scan_once  # type: ignore[attr-defined]
_JSON_START: Final = re.compile(r"\s*[\[{]")
_JSON_HEADS: Final = frozenset("{[ \t\n\r")
# What a string that add_string would read as JSON starts with.
JSON_HEADS: Final = _JSON_HEADS


def _parse(text: str) -> list[object] | None:
    """An object (as its members) or an array written in ``text``, or None."""
    start = 0
    if text[0] != "{" and text[0] != "[":
        match = _JSON_START.match(text)
        if match is None:
            return None
        start = match.end() - 1
    try:
        value, end = _SCAN(text, start)
    except (ValueError, StopIteration, RecursionError):
        return None
    if end != len(text) and not text[end:].isspace():
        return None
    return value if isinstance(value, list) else None


def _hides_text(text: str) -> bool:
    # Only these escapes can hide the characters of a name or a token from a
    # scan of the raw text; \n, \t, \" and \\ cannot join what they separate.
    return "\\" in text and ("\\u" in text or "\\/" in text)


def _worth_parsing(text: str) -> bool:
    """Could parsing ``text`` show the floor anything its raw form does not?

    Only when a key could name a secret (its name is then in the raw text,
    unless escaped) or an escape hides characters.
    """
    return _hides_text(text) or names_secret(text)


def add_string(
    out: list[Segment], text: str, path: str, role: str, trust: Trust, index: int | None
) -> None:
    """A string value: its text, and the members of any JSON object or array written in it."""
    if not text:
        return
    if text.startswith("data:"):
        # Never JSON: "d" is not one of _JSON_HEADS.
        _add_pieces(out, blobs.data_url_texts(text), path, role, trust, index)
        return
    if len(out) >= MAX_SEGMENTS:
        raise too_many()
    out.append(Segment(path, role, text, trust, index))
    if text[0] in _JSON_HEADS and len(text) <= _EMBEDDED_MAX:
        _embedded_once(out, text, path, role, trust, index, leaves=False)


def add_arguments(
    out: list[Segment],
    value: object,
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    depth: int,
) -> None:
    """A tool call's arguments: JSON in a string (chat, Responses) or an object (Anthropic).

    Besides the text and any secret-named members, the string leaves joined
    in one segment: a token split across two arguments is whole there.
    """
    if isinstance(value, str):
        key = (value, path, role, trust, index)
        kept = _CALLS.get(key)
        if kept is not None and len(out) + len(kept) <= MAX_SEGMENTS:
            out.extend(kept)
            return
        start = len(out)
        add_text(out, value, path, role, trust, index)
        embedded = value[:1] in _JSON_HEADS and len(value) <= _EMBEDDED_MAX
        if embedded:
            _embedded_once(out, value, path, role, trust, index, leaves=True)
        # Kept when what it made depends on the string alone: its JSON, if
        # any, was read into a recipe (see `_embedded_once`).
        if (
            kept is None
            and len(value) <= _CACHED_TEXT_MAX
            and (not embedded or (value, trust, True) in _RECIPES)
        ):
            _keep_call(key, tuple(out[start:]))
        return
    strings: list[str] = []
    if isinstance(value, dict):
        # walk_free's own call, collecting the leaves as it goes rather than in a second walk.
        free_members(value, path, role, trust, index, out, depth, skip_type=False, leaves=strings)
    else:
        walk_free(value, path, role, trust, index, out, depth)
        if not isinstance(value, list):
            return
        _strings(value, strings, depth, with_keys=False)
    add_joined(out, strings, path + "(joined)", role, index)


# What JSON written in a string adds (its secret-named pairs, what its escapes
# spelled, its leaves joined) depends only on the string, its trust and whether
# the leaves are joined: every such segment's path is the string's own plus a
# suffix, with the string's role and index. A conversation resends its tool
# calls and results on every request, so each string is parsed and judged once
# and its segments replayed after. Bounded: strings up to _CACHED_TEXT_MAX,
# and the cache is emptied when what it holds passes _CACHE_CHARS_MAX. A string
# with more than _CACHED_NESTING_MAX brackets is not cached: whether the json
# scanner meets the recursion limit on it depends on the stack it is called on.
_Recipe = tuple[tuple[str, str, Trust], ...]
_RECIPES: Final[dict[tuple[str, Trust, bool], _Recipe]] = {}
_CACHED_TEXT_MAX: Final = 8192
_CACHED_NESTING_MAX: Final = 100
_CACHE_CHARS_MAX = 4_000_000
_cached_chars = 0


# A tool call's arguments in a string, at their place (path, role, trust,
# message): the segments they make, kept whole. A conversation resends its
# tool calls on every request; from the second, their segments are the same
# objects, without a path built or a Segment made. Shared between requests,
# so nothing may change one. Bounded as the recipes are.
_CALLS: Final[dict[tuple[str, str, str, Trust, int | None], tuple[Segment, ...]]] = {}
_calls_chars = 0


def _keep_call(key: tuple[str, str, str, Trust, int | None], made: tuple[Segment, ...]) -> None:
    global _calls_chars
    size = len(key[0]) + len(key[1]) + sum(len(s.path) + len(s.text) for s in made)
    if _calls_chars + size > _CACHE_CHARS_MAX:
        _CALLS.clear()
        _calls_chars = 0
    _CALLS[key] = made
    _calls_chars += size


def _embedded_once(
    out: list[Segment],
    text: str,
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    *,
    leaves: bool,
) -> None:
    """``_embedded`` at the top nesting (only when worth parsing, unless ``leaves``), cached."""
    global _cached_chars
    key = (text, trust, leaves)
    recipe = _RECIPES.get(key)
    if recipe is None:
        if len(text) > _CACHED_TEXT_MAX or (
            text.count("[") + text.count("{") > _CACHED_NESTING_MAX
        ):
            if leaves or _worth_parsing(text):
                _embedded(
                    out, text, path, role, trust, index, _EMBEDDED_NESTING, [] if leaves else None
                )
            return
        found: list[Segment] = []
        if leaves or _worth_parsing(text):
            _embedded(found, text, "", "", trust, None, _EMBEDDED_NESTING, [] if leaves else None)
        recipe = tuple((segment.path, segment.text, segment.trust) for segment in found)
        size = len(text) + sum(len(piece) for _, piece, _ in recipe)
        if _cached_chars + size > _CACHE_CHARS_MAX:
            _RECIPES.clear()
            _cached_chars = 0
        _RECIPES[key] = recipe
        _cached_chars += size
    for suffix, piece, piece_trust in recipe:
        if len(out) >= MAX_SEGMENTS:
            raise too_many()
        out.append(Segment(path + suffix, role, piece, piece_trust, index))


def _embedded(
    out: list[Segment],
    text: str,
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    nesting: int,
    leaves: list[str] | None,
) -> None:
    parsed = _parse(text)
    if parsed is None:
        # Not JSON after all: plain text, scanned as such.
        return
    decoded: list[str] | None = [] if _hides_text(text) else None
    _walk_parsed(parsed, path, role, trust, index, out, 1, nesting, leaves, decoded)
    if decoded:
        # What the escapes spelled, one string per line, for the floor (and,
        # for text from outside, the injection check) to read.
        _append(out, "\n".join(decoded), path + "(decoded)", role, _key_trust(trust), index)
    if leaves is not None:
        add_joined(out, leaves, path + "(joined)", role, index)


def _walk_parsed(
    value: list[object],
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    out: list[Segment],
    depth: int,
    nesting: int,
    leaves: list[str] | None,
    decoded: list[str] | None,
) -> None:
    """Judge the members of parsed JSON; ``leaves`` and ``decoded`` collect its strings."""
    if depth > MAX_DEPTH:
        # Deeper structure stays covered by the raw text's own segment.
        return
    entries: Iterable[tuple[str | None, object]]
    entries = value if isinstance(value, Members) else zip(repeat(None), value)
    has_value = False
    for key, item in entries:
        if key is not None:
            if decoded is not None:
                decoded.append(key)
            if key == "value" or key == "Value":
                has_value = True
        if isinstance(item, str):
            if not item:
                continue
            if leaves is not None:
                leaves.append(item)
            if decoded is not None:
                decoded.append(item)
            if key is not None and _named(key):
                add_pair(out, key, item, path, role, index)
            if nesting > 1 and item[0] in _JSON_HEADS and _worth_parsing(item):
                _embedded(out, item, path, role, trust, index, nesting - 1, None)
        elif isinstance(item, list):
            _walk_parsed(item, path, role, trust, index, out, depth + 1, nesting, leaves, decoded)
    if has_value and isinstance(value, Members):
        _add_named_value(dict(value), path, role, index, out)


# -- the walkers --


def walk_free(
    value: object,
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    out: list[Segment],
    depth: int,
) -> None:
    """Every string in ``value``, keys included (see the module docstring)."""
    if isinstance(value, str):
        add_string(out, value, path, role, trust, index)
    elif isinstance(value, dict):
        free_members(value, path, role, trust, index, out, depth, skip_type=False)
    elif isinstance(value, list):
        if depth > MAX_DEPTH:
            raise too_deep()
        path = _bounded(path)
        for i, item in enumerate(value):
            if isinstance(item, str):
                add_string(out, item, f"{path}[{i}]", role, trust, index)
            elif isinstance(item, _CONTAINERS):
                walk_free(item, f"{path}[{i}]", role, trust, index, out, depth + 1)


def free_members(
    obj: dict[str, object],
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    out: list[Segment],
    depth: int,
    *,
    skip_type: bool,
    leaves: list[str] | None = None,
) -> None:
    """The members of a free-form object; ``skip_type``: the object is of an unknown
    type, whose ``type`` is left out only when it is a known word. ``leaves``, when
    given, gets every non-empty string value, nested ones too, in order (as
    _strings would, after the walk)."""
    if depth > MAX_DEPTH:
        raise too_deep()
    prefix = (path if len(path) <= _PATH_MAX else _bounded(path)) + "." if path else ""
    for position, (key, value) in enumerate(obj.items()):
        # Whether the key names a secret is read from SECRET_NAMES for a field
        # name, and from names_secret (dearer) only when a value needs it.
        if key in NAMES:
            child = prefix + key
            named: bool | None = key in SECRET_NAMES
        else:
            child = member_path(key, position, prefix, role, trust, index, out)
            named = None
        if isinstance(value, str):
            if not value:
                continue
            if leaves is not None:
                leaves.append(value)
            if skip_type and key == "type":
                if value not in WORDS:
                    add_text(out, value, child, role, trust, index)
                continue
            add_string(out, value, child, role, trust, index)
            if named or (named is None and names_secret(key)):
                add_pair(out, key, value, child, role, index)
        elif isinstance(value, _CONTAINERS):
            walk_free(value, child, role, trust, index, out, depth + 1)
            if leaves is not None:
                _strings(value, leaves, depth + 1, with_keys=False)
    if "value" in obj or "Value" in obj:
        _add_named_value(obj, _bounded(path) or "$", role, index, out)


def walk_known(
    value: object,
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    out: list[Segment],
    depth: int,
    registry: Registry,
) -> None:
    """Walk provider-defined JSON: objects with a registered ``type`` use its Spec."""
    if isinstance(value, str):
        add_string(out, value, path, role, trust, index)
    elif isinstance(value, dict):
        kind = value.get("type")
        spec = registry.get(kind, PLAIN) if isinstance(kind, str) else PLAIN
        walk_spec(value, spec, path, role, trust, index, out, depth, registry)
    elif isinstance(value, list):
        if depth > MAX_DEPTH:
            raise too_deep()
        path = _bounded(path)
        for i, item in enumerate(value):
            if isinstance(item, str):
                add_string(out, item, f"{path}[{i}]", role, trust, index)
            elif isinstance(item, _CONTAINERS):
                walk_known(item, f"{path}[{i}]", role, trust, index, out, depth + 1, registry)


def walk_typed(
    value: object,
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    out: list[Segment],
    depth: int,
    registry: Registry,
) -> None:
    """Walk what should be a registered type (a content part, block or item).

    An unknown type is scanned in full and as untrusted: it may be a kind of
    tool result this gateway does not know yet.
    """
    if isinstance(value, dict):
        kind = value.get("type")
        spec = registry.get(kind) if isinstance(kind, str) else None
        if spec is not None:
            text = value.get("text")
            # A bare text part, the commonest by far: what walk_spec would do, without it.
            if (
                len(value) == 2
                and isinstance(text, str)
                and "text" not in spec.opaque
                and "text" not in spec.base64
                and "text" not in spec.untrusted
            ):
                if depth > MAX_DEPTH:
                    raise too_deep()
                if text:
                    add_string(out, text, path + ".text", role, trust, index)
            else:
                walk_spec(value, spec, path, role, trust, index, out, depth, registry)
        else:
            free_members(value, path, role, UNTRUSTED, index, out, depth, skip_type=True)
    elif isinstance(value, str):
        add_string(out, value, path, role, trust, index)
    else:
        walk_free(value, path, role, UNTRUSTED, index, out, depth)


def walk_spec(
    obj: dict[str, object],
    spec: Spec,
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    out: list[Segment],
    depth: int,
    registry: Registry,
) -> None:
    if depth > MAX_DEPTH:
        raise too_deep()
    prefix = (path if len(path) <= _PATH_MAX else _bounded(path)) + "."
    opaque = spec.opaque
    untrusted = spec.untrusted
    for position, (key, value) in enumerate(obj.items()):
        key_trust = UNTRUSTED if key in untrusted else trust
        # As in free_members: names_secret only for a key outside NAMES, when needed.
        if key in NAMES:
            child = prefix + key
            named: bool | None = key in SECRET_NAMES
        else:
            child = member_path(key, position, prefix, role, key_trust, index, out)
            named = None
        if isinstance(value, str):
            if not value:
                continue
            if key in STRUCTURAL or key in opaque:
                if value not in WORDS and value not in registry:
                    if len(out) >= MAX_SEGMENTS:
                        raise too_many()
                    out.append(Segment(child, role, value, OPAQUE, index))
                continue
            if key in spec.base64:
                add_base64(out, value, child, role, key_trust, index, declared_type(obj))
            elif key == _ARGUMENTS or key in spec.args:
                add_arguments(out, value, child, role, key_trust, index, depth + 1)
            else:
                add_string(out, value, child, role, key_trust, index)
            if named or (named is None and names_secret(key)):
                add_pair(out, key, value, child, role, index)
        elif isinstance(value, _CONTAINERS):
            if key in STRUCTURAL_LISTS and isinstance(value, list) and is_words(value):
                _add_words(out, value, child, role, index)
            elif key in spec.tokens and isinstance(value, list):
                _add_tokens(out, value, child, role, index, depth + 1)
            elif key == _ARGUMENTS or key in spec.args:
                add_arguments(out, value, child, role, key_trust, index, depth + 1)
            elif key in spec.free:
                walk_free(value, child, role, key_trust, index, out, depth + 1)
            elif key in spec.typed:
                _walk_typed_member(value, child, role, key_trust, index, out, depth + 1, registry)
            else:
                sub = spec.nested.get(key)
                if sub is not None and isinstance(value, dict):
                    walk_spec(value, sub, child, role, key_trust, index, out, depth + 1, registry)
                else:
                    walk_known(value, child, role, key_trust, index, out, depth + 1, registry)
    if "value" in obj or "Value" in obj:
        _add_named_value(obj, _bounded(path), role, index, out)


def _walk_typed_member(
    value: dict[str, object] | list[object],
    path: str,
    role: str,
    trust: Trust,
    index: int | None,
    out: list[Segment],
    depth: int,
    registry: Registry,
) -> None:
    if isinstance(value, dict):
        walk_typed(value, path, role, trust, index, out, depth, registry)
        return
    if depth > MAX_DEPTH:
        raise too_deep()
    path = _bounded(path)
    for i, item in enumerate(value):
        walk_typed(item, f"{path}[{i}]", role, trust, index, out, depth + 1, registry)
    if len(value) > 1:
        join_parts(value, path, role, index, out)


def join_parts(
    parts: list[object], path: str, role: str, index: int | None, out: list[Segment]
) -> None:
    """The texts of a content list's parts joined: a token split across parts is whole."""
    texts: list[str] = []
    for part in parts:
        text = part.get("text") if isinstance(part, dict) else part
        if isinstance(text, str) and text:
            texts.append(text)
    add_joined(out, texts, path + "(joined)", role, index)


def is_words(value: object) -> TypeGuard[str | list[str]]:
    """A string or a list of strings: the shape of an enum-valued parameter."""
    if isinstance(value, str):
        return True
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def message_role(role: object) -> tuple[str, Trust]:
    """The Segment role and trust for a message's ``role`` value.

    Only the agent's own roles are trusted: tool/function messages and roles
    this gateway does not know may carry content from outside. The label is
    always one of the adapters' own, never the client's value, since labels
    are shown in errors and the audit.
    """
    trust = ROLE_TRUST.get(role) if isinstance(role, str) else None
    if trust is not None:
        assert isinstance(role, str)
        return role, trust
    return ROLE_UNKNOWN, UNTRUSTED


def walk_message(
    msg: dict[str, object],
    path: str,
    index: int,
    out: list[Segment],
    depth: int,
    registry: Registry,
) -> None:
    """A chat-style message: ``role``, ``content`` (a string or typed parts), extras."""
    if depth > MAX_DEPTH:
        raise too_deep()
    raw_role = msg.get("role")
    known = ROLE_TRUST.get(raw_role) if isinstance(raw_role, str) else None
    if known is None:
        role, trust = ROLE_UNKNOWN, UNTRUSTED
    else:
        assert isinstance(raw_role, str)
        role, trust = raw_role, known
        if len(msg) == 2:
            # `{"role", "content": "..."}`, most of a conversation: its one segment,
            # as the loop below would find it.
            content = msg.get("content")
            if isinstance(content, str):
                if content:
                    if not path:
                        child = "content"
                    elif len(path) <= _PATH_MAX:
                        child = path + ".content"
                    else:
                        child = _bounded(path) + ".content"
                    add_string(out, content, child, role, trust, index)
                return
    prefix = (path if len(path) <= _PATH_MAX else _bounded(path)) + "." if path else ""
    for position, (key, value) in enumerate(msg.items()):
        # As in free_members: names_secret only for a key outside NAMES, when needed.
        if key in NAMES:
            child = prefix + key
            named: bool | None = key in SECRET_NAMES
        else:
            child = member_path(key, position, prefix, role, trust, index, out)
            named = None
        if isinstance(value, str):
            if not value:
                continue
            if key == "role":
                # An unknown role is text the chat template shows the model.
                if role == ROLE_UNKNOWN:
                    add_text(out, value, child, role, UNTRUSTED, index)
            elif key in STRUCTURAL:
                add_opaque(out, value, child, role, index)
            else:
                add_string(out, value, child, role, trust, index)
                if named or (named is None and names_secret(key)):
                    add_pair(out, key, value, child, role, index)
        elif isinstance(value, list) and key == "content":
            _walk_typed_member(value, child, role, trust, index, out, depth + 1, registry)
        elif isinstance(value, _CONTAINERS):
            walk_known(value, child, role, trust, index, out, depth + 1, registry)


TopHandler = Callable[[object, list[Segment]], None]


_EMPTY_REGISTRY: Final[Registry] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """The top level of one kind of request body: which keys mean what."""

    # Keys with a handler of their own (the conversation, the system prompt).
    special: Mapping[str, TopHandler]
    # The request parameters of the API; any other key is of unknown provenance.
    known: frozenset[str]
    # Known keys whose string values are enums or identifiers.
    opaque: frozenset[str] = frozenset()
    # Known keys holding free-form JSON.
    free: frozenset[str] = frozenset()
    registry: Registry = field(default_factory=lambda: _EMPTY_REGISTRY)

    def segments(self, payload: dict[str, object]) -> list[Segment]:
        out: list[Segment] = []
        walk_request(payload, out, self)
        return out


def walk_request(payload: dict[str, object], out: list[Segment], spec: RequestSpec) -> None:
    """The top level of a request body.

    ``special`` keys have their own handler; other ``known`` keys are request
    parameters (``opaque``: enum- or id-valued, ``free``: free-form JSON); unknown
    keys are vendor extensions of unknown provenance (e.g. RAG ``documents``),
    scanned in full as untrusted.
    """
    special, known, opaque, free, registry = (
        spec.special,
        spec.known,
        spec.opaque,
        spec.free,
        spec.registry,
    )
    for position, (key, value) in enumerate(payload.items()):
        handler = special.get(key)
        if handler is not None:
            handler(value, out)
            continue
        if key not in known:
            path = member_path(key, position, "", ROLE_UNKNOWN, UNTRUSTED, None, out)
            if isinstance(value, str):
                if value:
                    add_string(out, value, path, ROLE_UNKNOWN, UNTRUSTED, None)
                    if _named(key):
                        add_pair(out, key, value, path, ROLE_UNKNOWN, None)
            else:
                walk_free(value, path, ROLE_UNKNOWN, UNTRUSTED, None, out, 2)
            continue
        enum = key in opaque or key in STRUCTURAL or key in STRUCTURAL_LISTS
        if isinstance(value, str):
            if not value:
                continue
            if enum:
                _add_words(out, value, key, ROLE_REQUEST, None)
                continue
            add_string(out, value, key, ROLE_REQUEST, TRUSTED, None)
            if _named(key):
                add_pair(out, key, value, key, ROLE_REQUEST, None)
        elif isinstance(value, _CONTAINERS):
            if enum and isinstance(value, list) and is_words(value):
                _add_words(out, value, key, ROLE_REQUEST, None)
            elif key in free:
                walk_free(value, key, ROLE_REQUEST, TRUSTED, None, out, 2)
            else:
                walk_known(value, key, ROLE_REQUEST, TRUSTED, None, out, 2, registry)
