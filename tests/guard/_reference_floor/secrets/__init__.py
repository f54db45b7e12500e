"""Deterministic detection of concrete secrets in outbound text.

A reader finds a rule by its name: token formats are data (``rules.yaml``,
checked and compiled once by ``rules``, found by ``tokens`` at their separator
or by ``glued`` at their keyword); the contextual rules are one module each
(``private_keys``, ``jwt``, ``urls``, ``assignments``, ``kubernetes``, ``curl``,
``bundler``), their kinds and samples in ``contextual``; ``engine`` runs them
all, and ``coverage`` writes ``COVERAGE.md`` from the rules.
"""

from __future__ import annotations

from tests.guard._reference_floor.secrets.contextual import CONTEXTUAL
from tests.guard._reference_floor.secrets.engine import scan
from tests.guard._reference_floor.secrets.rules import RULES
from tests.guard._reference_floor.secrets.urls import _KEYWORD_LOW_RE, _KEYWORD_RE

__all__ = ["KINDS", "names_secret", "scan"]

# Every kind a finding can have: the formats' kinds and the contextual ones.
KINDS: frozenset[str] = frozenset({r.kind for r in RULES} | set(CONTEXTUAL))


def names_secret(key: str) -> bool:
    """Whether ``key`` could name a secret: it holds a word the keyword passes
    look for (pass, pw, psw, pasw, secret, token, key, auth, cred, login, in
    any case).

    For the wire adapters, which give the value of such a JSON member a segment
    of its own, ``json.dumps(key) + ": " + json.dumps(value)``, so that a pair
    parsed out of a tool input is judged as its text form would be.
    """
    if key.isascii():
        return _KEYWORD_LOW_RE.search(key.lower()) is not None
    return _KEYWORD_RE.search(key) is not None
