"""Every string in any JSON value, and the walking machinery the provider adapters share.

``segments`` is the adapter for every path without a dedicated one (embeddings,
moderations, batches, ...): it returns every string with role ``unknown``.

The provider adapters describe their typed objects (content parts, blocks,
items) with a :class:`Spec` per ``type`` and let the walkers here do the rest,
so a field the SDKs add tomorrow is scanned by default rather than skipped.

What is not a segment, anywhere:

- string values of :data:`STRUCTURAL` keys in provider-defined objects: enums the
  provider validates, identifiers, and provider-made ciphertext/signatures. They
  cannot carry a secret by accident, and their entropy would only feed false
  positives. In free-form JSON (tool inputs, metadata, unknown keys) nothing is
  structural.
- binary payloads: ``data:`` URLs and the base64 fields a Spec names whose
  decoded bytes are not text (a NUL or invalid UTF-8 in the first 3 KiB), unless
  they are short (see ``_binary``). The bytes decide, not the declared media
  type, which is only a label: a ``.env`` sent as ``application/octet-stream``
  is decoded and scanned, a PNG is not.
- enum values a Spec names in ``skip`` (``detail``), and empty strings.

Object keys are data in free-form objects. A key of ``[A-Za-z0-9_$-]`` that
is at most 24 characters, or at most 64 without a digit, is a name and appears
verbatim in paths. Any other key is scanned as its own segment (path
``parent.<key#N>``, its value at ``parent.<value#N>``, N its position) and never
quoted in a path, because paths end up in error messages and logs. Common
credential formats (OpenAI, Anthropic, GitHub, Slack, Stripe, Google, AWS, JWTs)
are longer than 24 characters and contain digits or other characters, while
field names (``acknowledged_safety_checks``) are words; this scans what could
be a secret without turning every field name into a segment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gateway.wire import blobs
from gateway.wire.base import MAX_DEPTH, PayloadError, Segment, Trust

ROLE_UNKNOWN = "unknown"
# Request parameters outside the conversation: tool definitions, metadata, schemas.
ROLE_REQUEST = "request"
ROLE_SYSTEM = "system"

TRUSTED = Trust.TRUSTED
UNTRUSTED = Trust.UNTRUSTED

STRUCTURAL = frozenset(
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
# `required`); skipped only when every element is a string.
STRUCTURAL_LISTS = frozenset({"required", "include", "modalities"})

# The roles of the agent and its operator; tool results and unknown roles are untrusted.
ROLE_TRUST: Mapping[object, Trust] = MappingProxyType(
    {
        "system": TRUSTED,
        "developer": TRUSTED,
        "user": TRUSTED,
        "assistant": TRUSTED,
        "tool": UNTRUSTED,
        "function": UNTRUSTED,
    }
)

# Bounds on what one request can make the adapters allocate: each string is a
# Segment with its own path, and both grow with the body's shape, not its size.
# Legitimate requests stay far below: a 2000-message agent conversation with
# tool calls is ~12k segments, and OpenAI takes at most 2048 embedding inputs.
MAX_SEGMENTS = 100_000
_PATH_MAX = 256
_PATH_HEAD = 64

_SHORT_NAME_MAX = 24
_NAME_MAX = 64
_PLAIN_TABLE = str.maketrans("_-$", "aaa")


@dataclass(frozen=True, slots=True)
class Spec:
    """How to walk one ``type`` of provider object; keys not named here are walked normally."""

    # Keys whose subtree came from outside the agent's trust boundary.
    untrusted: frozenset[str] = frozenset()
    # Keys whose string value is an enum or opaque, never text: skipped. Any
    # other value there is still walked, so nothing can hide in it.
    skip: frozenset[str] = frozenset()
    # Keys whose string value is base64 or a data: URL: scanned decoded when it
    # is text, skipped when binary, scanned as sent when it is not base64.
    base64: frozenset[str] = frozenset()
    # Keys holding free-form JSON (tool inputs, anything typed `object` that came
    # from outside): every string, keys included, nothing structural.
    free: frozenset[str] = frozenset()
    # Keys holding a typed object or a list of them, where an unknown type is
    # scanned in full as untrusted.
    typed: frozenset[str] = frozenset()
    # Keys holding an untyped object that needs its own Spec.
    nested: Mapping[str, Spec] = field(default_factory=lambda: _EMPTY_NESTED)
    # Keys whose list value only restates other fields token by token (logprobs).
    drop: frozenset[str] = frozenset()


def keys(*names: str) -> frozenset[str]:
    return frozenset(names)


_EMPTY_NESTED: Mapping[str, Spec] = MappingProxyType({})
PLAIN = Spec()

Registry = Mapping[str, Spec]


def segments(payload: object) -> list[Segment]:
    out: list[Segment] = []
    if isinstance(payload, str):
        add_text(out, payload, "$", ROLE_UNKNOWN, TRUSTED, None)
    else:
        walk_free(payload, "", ROLE_UNKNOWN, TRUSTED, None, out, 1)
    return out


def too_deep() -> PayloadError:
    return PayloadError(f"request body nests deeper than {MAX_DEPTH} levels")


def _bounded(path: str) -> str:
    """``path``, with its middle elided once it is long; the end says the most."""
    if len(path) <= _PATH_MAX:
        return path
    return f"{path[:_PATH_HEAD]}…{path[_PATH_HEAD - _PATH_MAX + 1 :]}"


def _append(
    out: list[Segment], text: str, path: str, role: str, trust: Trust, index: int | None
) -> None:
    if len(out) >= MAX_SEGMENTS:
        raise PayloadError(f"request body has more than {MAX_SEGMENTS} text fields")
    out.append(Segment(path, role, text, trust, index))


def add_text(
    out: list[Segment], text: str, path: str, role: str, trust: Trust, index: int | None
) -> None:
    if not text:
        return
    if text.startswith("data:"):
        _add_pieces(out, blobs.data_url_texts(text), path, role, trust, index)
        return
    _append(out, text, path, role, trust, index)


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
_DECLARING_KEYS = ("media_type", "mime_type", "mimeType", "format", "filename", "file_name")


def declared_type(obj: Mapping[str, object]) -> str | None:
    for key in _DECLARING_KEYS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def is_plain_key(key: str) -> bool:
    """A name that can go in a path verbatim; see the module docstring."""
    size = len(key)
    if not 0 < size <= _NAME_MAX or not key.isascii():
        return False
    if not (key.isalnum() or key.translate(_PLAIN_TABLE).isalnum()):
        return False
    return size <= _SHORT_NAME_MAX or not any(c.isdigit() for c in key)


# Field names of the provider APIs and JSON Schema, all plain: the walkers test
# membership here before calling is_plain_key, which is most of a key's cost.
NAMES = frozenset(
    {
        "$defs",
        "$ref",
        "action",
        "additionalProperties",
        "allOf",
        "annotations",
        "anyOf",
        "arguments",
        "cache_control",
        "call_id",
        "caller",
        "citations",
        "const",
        "content",
        "context",
        "custom",
        "data",
        "default",
        "definitions",
        "description",
        "detail",
        "encrypted_content",
        "enum",
        "examples",
        "file",
        "file_data",
        "file_id",
        "file_url",
        "filename",
        "format",
        "function",
        "function_call",
        "headers",
        "id",
        "image_url",
        "input",
        "input_audio",
        "input_schema",
        "is_error",
        "items",
        "json_schema",
        "logprobs",
        "maxItems",
        "maxLength",
        "maximum",
        "media_type",
        "metadata",
        "minItems",
        "minLength",
        "minimum",
        "mode",
        "model",
        "name",
        "namespace",
        "nullable",
        "oneOf",
        "output",
        "parameters",
        "pattern",
        "phase",
        "prompt_cache_breakpoint",
        "properties",
        "query",
        "reasoning_content",
        "refusal",
        "required",
        "results",
        "role",
        "schema",
        "server_label",
        "signature",
        "source",
        "status",
        "strict",
        "summary",
        "text",
        "thinking",
        "title",
        "tool_call_id",
        "tool_calls",
        "tool_use_id",
        "ttl",
        "type",
        "url",
    }
)


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

    A key that is not a plain name is scanned as text and replaced by its position.
    """
    if key in NAMES or is_plain_key(key):
        return prefix + key
    add_text(out, key, f"{prefix}<key#{position}>", role, trust, index)
    return f"{prefix}<value#{position}>"


def is_words(value: object) -> bool:
    """A string or a list of strings: the shape of an enum-valued parameter."""
    if isinstance(value, str):
        return True
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


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
        add_text(out, value, path, role, trust, index)
    elif isinstance(value, dict):
        free_members(value, path, role, trust, index, out, depth, skip_type=False)
    elif isinstance(value, list):
        if depth > MAX_DEPTH:
            raise too_deep()
        path = _bounded(path)
        for i, item in enumerate(value):
            if isinstance(item, str):
                add_text(out, item, f"{path}[{i}]", role, trust, index)
            elif isinstance(item, dict | list):
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
) -> None:
    if depth > MAX_DEPTH:
        raise too_deep()
    prefix = f"{_bounded(path)}." if path else ""
    for position, (key, value) in enumerate(obj.items()):
        if isinstance(value, str):
            # The discriminator of an unknown type names it; anything else is text.
            if value and not (skip_type and key == "type" and is_plain_key(value)):
                child = member_path(key, position, prefix, role, trust, index, out)
                add_text(out, value, child, role, trust, index)
                continue
        elif isinstance(value, dict | list):
            child = member_path(key, position, prefix, role, trust, index, out)
            walk_free(value, child, role, trust, index, out, depth + 1)
            continue
        if key not in NAMES and not is_plain_key(key):
            member_path(key, position, prefix, role, trust, index, out)


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
        add_text(out, value, path, role, trust, index)
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
                add_text(out, item, f"{path}[{i}]", role, trust, index)
            elif isinstance(item, dict | list):
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
                and "text" not in spec.skip
                and "text" not in spec.base64
                and "text" not in spec.untrusted
            ):
                if depth > MAX_DEPTH:
                    raise too_deep()
                add_text(out, text, path + ".text", role, trust, index)
            else:
                walk_spec(value, spec, path, role, trust, index, out, depth, registry)
        else:
            free_members(value, path, role, UNTRUSTED, index, out, depth, skip_type=True)
    elif isinstance(value, str):
        add_text(out, value, path, role, trust, index)
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
    prefix = _bounded(path) + "."
    skip = spec.skip
    untrusted = spec.untrusted
    for position, (key, value) in enumerate(obj.items()):
        if isinstance(value, str):
            if key in STRUCTURAL:
                continue
            if value and key not in skip:
                key_trust = UNTRUSTED if key in untrusted else trust
                child = member_path(key, position, prefix, role, key_trust, index, out)
                if key in spec.base64:
                    add_base64(out, value, child, role, key_trust, index, declared_type(obj))
                else:
                    add_text(out, value, child, role, key_trust, index)
                continue
        elif isinstance(value, dict | list):
            if key in STRUCTURAL_LISTS and is_words(value):
                continue
            if key in spec.drop and isinstance(value, list):
                continue
            key_trust = UNTRUSTED if key in untrusted else trust
            child = member_path(key, position, prefix, role, key_trust, index, out)
            if key in spec.free:
                walk_free(value, child, role, key_trust, index, out, depth + 1)
            elif key in spec.typed:
                _walk_typed_member(value, child, role, key_trust, index, out, depth + 1, registry)
            else:
                sub = spec.nested.get(key)
                if sub is not None and isinstance(value, dict):
                    walk_spec(value, sub, child, role, key_trust, index, out, depth + 1, registry)
                else:
                    walk_known(value, child, role, key_trust, index, out, depth + 1, registry)
            continue
        if key not in NAMES and not is_plain_key(key):
            member_path(key, position, prefix, role, trust, index, out)


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


def message_role(role: object) -> tuple[str, Trust]:
    """The Segment role and trust for a message's ``role`` value.

    Only the agent's own roles are trusted: tool/function/ipython messages and
    roles this gateway does not know may carry content from outside.
    """
    if isinstance(role, str):
        trust = ROLE_TRUST.get(role)
        if trust is not None:
            return role, trust
        if is_plain_key(role):
            return role, UNTRUSTED
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
    role, trust = message_role(raw_role)
    if isinstance(raw_role, str) and role == ROLE_UNKNOWN:
        add_text(out, raw_role, f"{path}.role", role, trust, index)
    prefix = _bounded(path) + "."
    for position, (key, value) in enumerate(msg.items()):
        if isinstance(value, str):
            if key in STRUCTURAL:
                continue
            if value:
                child = member_path(key, position, prefix, role, trust, index, out)
                add_text(out, value, child, role, trust, index)
                continue
        elif isinstance(value, list) and key == "content":
            _walk_typed_member(value, prefix + key, role, trust, index, out, depth + 1, registry)
            continue
        elif isinstance(value, dict | list):
            child = member_path(key, position, prefix, role, trust, index, out)
            walk_known(value, child, role, trust, index, out, depth + 1, registry)
            continue
        if key not in NAMES and not is_plain_key(key):
            member_path(key, position, prefix, role, trust, index, out)


TopHandler = Callable[[object, list[Segment]], None]


def walk_request(
    payload: dict[str, object],
    out: list[Segment],
    *,
    special: Mapping[str, TopHandler],
    known: frozenset[str],
    skip: frozenset[str],
    free: frozenset[str],
    registry: Registry,
) -> None:
    """The top level of a request body.

    ``special`` keys have their own handler; other ``known`` keys are request
    parameters (``skip``: enum- or id-valued, ``free``: free-form JSON); unknown
    keys are vendor extensions of unknown provenance (e.g. RAG ``documents``),
    scanned in full as untrusted.
    """
    for position, (key, value) in enumerate(payload.items()):
        handler = special.get(key)
        if handler is not None:
            handler(value, out)
            continue
        if isinstance(value, str | dict | list):
            if key in known:
                if (key in skip or key in STRUCTURAL or key in STRUCTURAL_LISTS) and is_words(
                    value
                ):
                    continue
                if key in free:
                    walk_free(value, key, ROLE_REQUEST, TRUSTED, None, out, 2)
                else:
                    walk_known(value, key, ROLE_REQUEST, TRUSTED, None, out, 2, registry)
            else:
                path = member_path(key, position, "", ROLE_UNKNOWN, UNTRUSTED, None, out)
                walk_free(value, path, ROLE_UNKNOWN, UNTRUSTED, None, out, 2)
        elif key not in NAMES and not is_plain_key(key):
            member_path(key, position, "", ROLE_UNKNOWN, UNTRUSTED, None, out)
