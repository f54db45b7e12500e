"""Token-format rules: ``rules.yaml``, checked and compiled once, at import.

Each rule is one provider format, found one of two ways:

* ``prefixes``: the token starts with a prefix that ends in ``_``, ``-`` or
  ``.`` (``ghp_``, ``sk-``, ``ya29.``), and ``pattern`` is the body after it.
  The separator passes (``tokens``) find these: a separator is a cheap anchor.
* ``keywords``: a literal the token starts with and that runs straight into
  the body (``AKIA``, ``GR1348941``, ``dapi``), and ``pattern`` is the whole
  token. The keyword passes (``glued``) find these, anchored on the rarest
  character of the keyword.

A pattern may name one group ``value``: the finding then covers that group only
(``IDENTIFIED BY '<value>'``), and the checks below read it as the body.

What a body must also satisfy: ``min_classes`` (lowercase, uppercase, digits,
other), ``entropy`` (bits per character), ``runs`` (six equal characters in a
row make a filler, unless the format has digit runs), ``fill`` (``strict``:
no placeholder markers; ``xxxx``: only an ``XXXX`` run is a blank, as in AWS ids).

Every rule carries at least one ``match`` sample (a finding of its kind) and one
``no_match`` sample (none of its kind); ``tests/guard/secrets/test_rules.py`` runs
them all through ``scan``. The samples are synthetic, never real keys.

An error names the rule and the field, never a sample or any other value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

RULES_FILE = Path(__file__).with_name("rules.yaml")

_SEPARATORS = ("_", "-", ".")
_FIELDS = frozenset(
    [
        "id",
        "kind",
        "prefixes",
        "keywords",
        "pattern",
        "min_classes",
        "min_length",
        "entropy",
        "runs",
        "fill",
        "left",
        "shape",
        "note",
        "match",
        "no_match",
    ]
)
_ID_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_KIND_RE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")


class RulesError(ValueError):
    """The rules file is malformed; the message names the rule and the field."""


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    kind: str
    prefixes: tuple[str, ...]
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    min_classes: int
    min_length: int
    entropy: float
    runs: bool
    fill: str
    left: str
    shape: str
    # Texts that must give a finding of this kind, and texts that must not.
    matches: tuple[str, ...]
    non_matches: tuple[str, ...]


def _strings(raw: Any, where: str, *, empty: bool = False) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(s, str) and s for s in raw):
        raise RulesError(f"{where}: must be a string or a list of non-empty strings")
    if not raw and not empty:
        raise RulesError(f"{where}: must not be empty")
    return tuple(raw)


def _number(raw: Any, where: str, default: float, lo: float, hi: float) -> float:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not lo <= raw <= hi:
        raise RulesError(f"{where}: must be a number from {lo} to {hi}")
    return float(raw)


def _rule(raw: Any, index: int) -> Rule:
    if not isinstance(raw, dict):
        raise RulesError(f"rules.yaml: entry {index}: must be a mapping")
    rid = raw.get("id")
    if not isinstance(rid, str) or _ID_RE.fullmatch(rid) is None:
        raise RulesError(f"rules.yaml: entry {index}: id must be lowercase-kebab-case")
    where = f"rules.yaml: rule {rid!r}"
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise RulesError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}")
    kind = raw.get("kind")
    if not isinstance(kind, str) or _KIND_RE.fullmatch(kind) is None:
        raise RulesError(f"{where}: kind must be lowercase_snake_case")
    if ("prefixes" in raw) == ("keywords" in raw):
        raise RulesError(f"{where}: needs exactly one of prefixes and keywords")
    prefixes = _strings(raw.get("prefixes", []), f"{where}: prefixes", empty=True)
    keywords = _strings(raw.get("keywords", []), f"{where}: keywords", empty=True)
    for p in prefixes:
        if not p.endswith(_SEPARATORS) or len(p) < 2:
            raise RulesError(f"{where}: prefixes: each must end with one of _ - .")
    for k in keywords:
        if len(k) < 2 or not k.isascii():
            raise RulesError(f"{where}: keywords: each must be two ASCII characters or more")
    src = raw.get("pattern")
    if not isinstance(src, str) or not src:
        raise RulesError(f"{where}: pattern must be a non-empty string")
    try:
        pattern = re.compile(src, re.ASCII)
    except re.error as e:
        raise RulesError(f"{where}: pattern does not compile: {e.msg} at {e.pos}") from None
    if pattern.groups > 1 or (pattern.groups and "value" not in pattern.groupindex):
        raise RulesError(f"{where}: pattern may capture one group only, named value")
    fill = raw.get("fill", "strict")
    if fill not in ("strict", "xxxx"):
        raise RulesError(f"{where}: fill must be strict or xxxx")
    runs = raw.get("runs", True)
    if not isinstance(runs, bool):
        raise RulesError(f"{where}: runs must be true or false")
    left = raw.get("left", "_")
    if not isinstance(left, str):
        raise RulesError(f"{where}: left must be a string")
    samples = {}
    for field in ("match", "no_match"):
        samples[field] = _strings(raw.get(field), f"{where}: {field}")
    shape = raw.get("shape", "")
    if not isinstance(shape, str):
        raise RulesError(f"{where}: shape must be a string")
    return Rule(
        id=rid,
        kind=kind,
        prefixes=prefixes,
        keywords=keywords,
        pattern=pattern,
        min_classes=int(_number(raw.get("min_classes"), f"{where}: min_classes", 2, 0, 4)),
        min_length=int(_number(raw.get("min_length"), f"{where}: min_length", 0, 0, 4096)),
        entropy=_number(raw.get("entropy"), f"{where}: entropy", 0.0, 0.0, 8.0),
        runs=runs,
        fill=fill,
        left=left,
        shape=shape,
        matches=samples["match"],
        non_matches=samples["no_match"],
    )


def load(path: Path = RULES_FILE) -> tuple[Rule, ...]:
    """The rules of ``path``, checked: ids, prefixes and keywords each appear once."""
    with path.open(encoding="utf-8") as f:
        # A safe loader either way; the C one, when PyYAML was built with it, is faster.
        doc = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(doc, dict) or not isinstance(doc.get("rules"), list):
        raise RulesError("rules.yaml: must be a mapping with a list under 'rules'")
    rules = tuple(_rule(raw, i) for i, raw in enumerate(doc["rules"]))
    seen: dict[str, str] = {}
    for r in rules:
        for literal in (f"id {r.id}", *(f"literal {x}" for x in (*r.prefixes, *r.keywords))):
            if literal in seen:
                raise RulesError(
                    f"rules.yaml: rule {r.id!r}: {literal} already in {seen[literal]!r}"
                )
            seen[literal] = r.id
    return rules


RULES: tuple[Rule, ...] = load()
