"""What every rule module shares: the scan state and the priorities of findings."""

from __future__ import annotations

import re
from dataclasses import dataclass

_A = re.ASCII


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# A specific format wins over a context finding, which wins over a generic one.
_PRIO_SPECIFIC = 3
_PRIO_CONTEXT = 2
_PRIO_GENERIC = 1


@dataclass(slots=True)
class _Ctx:
    """One scan's text, its hits, and how far context rules have already read.

    Work per character must stay bounded on hostile input, so a rule that reads
    past its anchor (a document, a query, a token run) remembers where it got to
    and the next anchor inside that stretch does not read it again.
    """

    text: str
    hits: list[tuple[int, int, str, int]]
    seen: set[int]
    # End of the last value read by the current keyword pass: a "name" inside
    # it is part of that value ("key=key=key=..." costs one hit, not thousands).
    value_end: int = -1
    # End of the last Kubernetes document whose data was read.
    k8s_until: int = -1
    # The JWT header run being read (its end), and where no JWT can start before.
    jwt_run_end: int = -1
    jwt_skip: int = -1
    jwt_tail_end: int = -1
    jwt_tail_marker: bool = False
    jwt_last_marker: int = -1
    # The URL query of the last "sig=" read: its "?", how far it was read, and
    # whether it holds a SAS field.
    sas_query: int = -1
    sas_read: int = -1
    sas_fields: bool = False
    service_account: bool | None = None

    def add(self, start: int, end: int, kind: str, prio: int) -> None:
        if end > start:
            self.hits.append((start, end, kind, prio))
