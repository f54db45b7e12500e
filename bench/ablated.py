"""`reefgate serve` with stages of the request path switched off, for `bench breakdown`.

    python -m bench.ablated --without guard,parse,audit serve --config DIR --port 0

A measuring instrument, never a way to run the gateway: without the guard it
forwards text nobody checked. Each stage's cost is read off as the
difference in CPU per request between two variants, in the same run:

* ``injection``: the embedded injection detector finds nothing;
* ``secrets``: the secret scan finds nothing;
* ``guard``: the whole guard pipeline (both detectors, the per-text caches)
  returns allow without looking;
* ``parse``: the body is forwarded without being decoded, parsed or walked
  into segments;
* ``audit``: no audit entry is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

STAGES = ("injection", "secrets", "guard", "parse", "audit")


def switch_off(stages: Sequence[str]) -> None:
    from gateway.guard import pipeline
    from gateway.guard.decision import ALLOW, Decision
    from gateway.guard.detectors import injection, secrets
    from gateway.guard.findings import Finding
    from gateway.observe import audit
    from gateway.proxy import reverse
    from gateway.wire.base import Segment

    # The pipeline calls the detectors through their modules, so replacing
    # the modules' functions reaches it.
    if "injection" in stages:
        nothing_found = injection.assess("")

        def clean(text: str) -> injection.InjectionAssessment:
            return nothing_found

        injection.assess = clean
    if "secrets" in stages:

        def nothing(text: str) -> list[Finding]:
            return []

        secrets.scan = nothing
    if "guard" in stages:
        # The request path calls `inspect` then `judge`; `check` is what the
        # other callers use. All three allow without looking.

        async def allow(
            self: pipeline.Guard,
            segments: Sequence[Segment],
            policy: pipeline.TeamPolicy,
            source: str,
            destination: str,
            deadline: float | None = None,
        ) -> Decision:
            return ALLOW

        async def inspect_nothing(
            self: pipeline.Guard,
            segments: Sequence[Segment],
            policy: pipeline.TeamPolicy,
            upstream: str = "",
            deadline: float | None = None,
        ) -> pipeline.Inspection:
            return pipeline.Inspection(segments, [], ALLOW, pipeline._Pace(None))

        async def judge_nothing(
            self: pipeline.Guard, inspection: pipeline.Inspection, *args: Any, **kwargs: Any
        ) -> Decision:
            return ALLOW

        pipeline.Guard.check = allow  # type: ignore[method-assign]
        pipeline.Guard.inspect = inspect_nothing  # type: ignore[method-assign]
        pipeline.Guard.judge = judge_nothing  # type: ignore[method-assign]
    if "parse" in stages:

        def unparsed(
            path: str, query: str, content_type: str | None, body: bytes
        ) -> tuple[list[Segment], object | None]:
            # An empty object rather than no payload: a body that is not JSON
            # is bound to reviews by its SHA-256, work the parsed build never
            # does (under callgrind, 124 k instructions of the ~4.5 KB turn
            # that were counted as proxy core).
            return [], {}

        # The proxy module imported the function by name; that name is the one to replace.
        reverse.request_segments = unparsed  # type: ignore[attr-defined]
    if "audit" in stages:

        def unwritten(self: audit.AuditLog, type: str, payload: object, ts: object = None) -> str:
            return ""

        def unkept(self: audit.AuditLog, type: str, payload: object, ts: object = None) -> None:
            return None

        audit.AuditLog.append = unwritten  # type: ignore[method-assign]
        audit.AuditLog.keep = unkept  # type: ignore[method-assign]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ablated")
    parser.add_argument("--without", default="", help=f"comma-separated: {', '.join(STAGES)}")
    args, rest = parser.parse_known_args(list(argv))
    stages = [s for s in args.without.split(",") if s]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown stage(s): {', '.join(unknown)}")
    switch_off(stages)
    from gateway.cli import main as reefgate

    return reefgate(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
