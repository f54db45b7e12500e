"""`python -m bench <name> [options]`: dispatch to bench/<name>.py."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = ("overhead", "scan", "conversation", "memory", "breakdown", "ttft", "instructions")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in BENCHMARKS:
        print(
            f"usage: python -m bench {{{','.join(BENCHMARKS)}}} "
            "[--quick] [--json] [--smoke] [--no-install]",
            file=sys.stderr,
        )
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(f"bench.{argv[0]}")
    rc: int = module.main(argv[1:])
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
