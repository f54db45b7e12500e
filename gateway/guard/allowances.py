"""A team's allowances: findings it lets through, each named by the rule that allowed it.

* ``allow.fingerprints``: a value whose fingerprint (as the audit writes it) is
  listed; a known test value, for instance.
* ``allow.patterns``: a value an RE2 pattern matches whole; a provider's
  documented example keys.
* ``allow.credential_paths``: a finding of a listed kind at a listed JSON
  path, where an intentional credential goes upstream (an MCP server's
  headers in a Responses request, ``mcp_servers[*].authorization_token`` in a
  Messages request).

Pattern allowances need the value, which the guard does not keep: each
finding carries, from the moment it is found, the patterns of every team
that match it whole (`AllowPatterns.matching`), and a team's check reads that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from gateway.config.models import Allow, CredentialPath
from gateway.guard import rx

# One step of a credential path: a key, `[*]`, `[N]` or `.*`.
_STEP: Final = re.compile(r"\[\*\]|\[(\d+)\]|\.\*|\.?([A-Za-z_][\w-]*)")


def _path_regex(path: str) -> re.Pattern[str]:
    """The segment paths a credential path covers: the field itself and all below it."""
    out = []
    for m in _STEP.finditer(path):
        step = m.group(0)
        if step == "[*]":
            out.append(r"\[\d+\]")
        elif m.group(1) is not None:
            out.append(rf"\[{m.group(1)}\]")
        elif step == ".*":
            out.append(r"\.[^.\[(<]+")
        else:
            out.append(("\\." if step.startswith(".") else "") + re.escape(m.group(2)))
    # Below the field: a key, an index, the key-value pair or key segment the adapters add.
    return re.compile("".join(out) + r"(?=$|[.\[(])")


class AllowPatterns:
    """Every team's ``allow.patterns``, checked once per found value."""

    __slots__ = ("_patterns",)

    def __init__(self, sources: set[str]) -> None:
        self._patterns = [(src, rx.compile(src)) for src in sorted(sources)]

    def matching(self, value: str) -> tuple[str, ...]:
        return tuple(src for src, p in self._patterns if p.fullmatch(value) is not None)


@dataclass(frozen=True, slots=True)
class _Path:
    index: int
    where: re.Pattern[str]
    kinds: frozenset[str]
    upstreams: frozenset[str] | None


class Allowances:
    __slots__ = ("_fingerprints", "_paths", "_patterns")

    def __init__(self, allow: Allow) -> None:
        self._fingerprints = frozenset(allow.fingerprints)
        self._patterns = {src: i for i, src in enumerate(allow.patterns)}
        self._paths = tuple(_compile(i, cp) for i, cp in enumerate(allow.credential_paths))

    def __bool__(self) -> bool:
        return bool(self._fingerprints or self._patterns or self._paths)

    def rule(
        self, kind: str, fingerprint: str, patterns: tuple[str, ...], path: str, upstream: str
    ) -> str | None:
        """The rule that allows this finding, as the audit names it, or None."""
        if fingerprint in self._fingerprints:
            return "allow.fingerprints"
        for src in patterns:
            index = self._patterns.get(src)
            if index is not None:
                return f"allow.patterns[{index}]"
        for cp in self._paths:
            if (
                kind in cp.kinds
                and (cp.upstreams is None or upstream in cp.upstreams)
                and cp.where.match(path)
            ):
                return f"allow.credential_paths[{cp.index}]"
        return None


def _compile(index: int, cp: CredentialPath) -> _Path:
    return _Path(
        index,
        _path_regex(cp.path),
        frozenset(cp.kinds),
        frozenset(cp.upstreams) if cp.upstreams is not None else None,
    )
