"""The `reefgate` command: serve, check, eval, config validate, audit verify."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from gateway import __version__
from gateway.config.loader import LoadedConfig, collect, load
from gateway.errors import ConfigError
from gateway.guard.decision import Decision
from gateway.guard.pipeline import Guard
from gateway.guard.verdict import Direction

log = logging.getLogger("reefgate")


def _default_config_dir() -> Path | None:
    here = Path("config")
    return here if (here / "gateway.yaml").is_file() else None


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run on uvloop when it is installed: it roughly halves the event loop's share of CPU."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main())
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())


# CPython's default is 700 allocations.
_GC_YOUNG_THRESHOLD = 10_000


async def _serve(config: LoadedConfig, host: str, port: int) -> None:
    from gateway.app import make_app
    from gateway.proxy.server import GatewayRunner

    app = make_app(config)
    runner = GatewayRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=2048, reuse_address=True)
    await site.start()
    # Everything loaded so far (config, compiled patterns, the injection model)
    # lives for the whole process: moving it out of the collector's view keeps
    # full collections from walking it again and again under load.
    gc.collect()
    gc.freeze()
    # A young collection walks every live young object, and under concurrency
    # that is mostly the same in-flight requests' objects each time, however
    # few were allocated since the last one: fewer, not smaller, collections
    # are what save time (about 5% of CPU per request at c=50).
    gc.set_threshold(_GC_YOUNG_THRESHOLD, 10, 10)
    for addr in runner.addresses:
        if isinstance(addr, tuple):
            print(
                f"reefgate {__version__} listening on http://{addr[0]}:{addr[1]} "
                f"(config: {config.source})",
                flush=True,
            )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def cmd_serve(args: argparse.Namespace) -> int:
    config = _config_for(args)
    if config is None:
        return 2
    host = args.host or config.gateway.listen.host
    port = args.port if args.port is not None else config.gateway.listen.port
    _run(lambda: _serve(config, host, port))
    return 0


def cmd_config_validate(args: argparse.Namespace) -> int:
    loaded, issues = collect(args.dir)
    if loaded is None:
        for issue in issues:
            print(f"error: {issue}", file=sys.stderr)
        print(f"{len(issues)} error(s) in {args.dir}", file=sys.stderr)
        return 1
    teams = ", ".join(sorted(loaded.teams)) or "(none)"
    ups = ", ".join(sorted(loaded.gateway.upstreams))
    print(f"{args.dir}: ok (upstreams: {ups}; teams: {teams})")
    return 0


def cmd_audit_verify(args: argparse.Namespace) -> int:
    from gateway.observe.audit import verify

    result = verify(args.path)
    if result.ok:
        print(f"{args.path}: ok, {result.entries} entries, head {result.head or '(empty)'}")
        return 0
    where = f" at line {result.line}" if result.line is not None else ""
    print(f"{args.path}: BROKEN{where}: {result.error}", file=sys.stderr)
    return 1


def _config_for(args: argparse.Namespace) -> LoadedConfig | None:
    config_dir = args.config if args.config is not None else _default_config_dir()
    try:
        return load(config_dir)
    except ConfigError as exc:
        for issue in exc.issues:
            print(f"error: {issue}", file=sys.stderr)
        return None


async def _with_guard(
    config: LoadedConfig, work: Callable[[Guard], Coroutine[Any, Any, int]]
) -> int:
    import aiohttp

    from gateway.app import build_guard

    guard = build_guard(config)
    async with aiohttp.ClientSession(
        skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
        auto_decompress=False,
    ) as session:
        guard.bind(session)
        return await work(guard)


def _verdict_json(decision: Decision, policy_version: str) -> str:
    return json.dumps(
        {
            "decision": decision.action,
            "category": decision.category,
            "reason": decision.reason,
            "policyVersion": policy_version,
            "findings": [
                {"kind": e.kind, "fingerprint": e.fingerprint, "where": e.where}
                for e in decision.evidence
            ],
        },
        ensure_ascii=False,
    )


def cmd_check(args: argparse.Namespace) -> int:
    config = _config_for(args)
    if config is None:
        return 2
    if args.team is not None and args.team not in config.teams:
        print(f"error: no team {args.team!r} in {config.source}", file=sys.stderr)
        return 2

    async def run(guard: Guard) -> int:
        policy = guard.policy(args.team or _default_team(config))
        source = f"team:{policy.name or 'default'}"
        if not args.jsonl:
            text = sys.stdin.read()
            decision = await guard.check_text(text, args.direction, policy, source, "check")
            print(_verdict_json(decision, policy.policy_version))
            return 0
        out = sys.stdout
        batch: list[tuple[str, Direction]] = []

        async def flush() -> None:
            results = await asyncio.gather(
                *(guard.check_text(t, d, policy, source, "check") for t, d in batch)
            )
            out.writelines(_verdict_json(r, policy.policy_version) + "\n" for r in results)
            batch.clear()

        for n, line in enumerate(sys.stdin, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                text = row["text"]
                direction = row.get("direction", args.direction)
                if not isinstance(text, str) or direction not in ("outbound", "inbound"):
                    raise ValueError("text must be a string, direction outbound or inbound")
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                print(f"error: stdin line {n}: {exc}", file=sys.stderr)
                return 2
            batch.append((text, direction))
            if len(batch) >= 256:
                await flush()
        if batch:
            await flush()
        out.flush()
        return 0

    return _run_guard(config, run)


def _default_team(config: LoadedConfig) -> str:
    for name, team in config.teams.items():
        if team.default:
            return name
    return ""


def _run_guard(config: LoadedConfig, work: Callable[[Guard], Coroutine[Any, Any, int]]) -> int:
    result: list[int] = []

    async def main() -> None:
        result.append(await _with_guard(config, work))

    _run(main)
    return result[0]


def cmd_eval(args: argparse.Namespace) -> int:
    from gateway.evaluate import Report, is_flagged, read_rows

    config = _config_for(args)
    if config is None:
        return 2
    try:
        rows = read_rows(args.files)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    async def run(guard: Guard) -> int:
        policy = guard.policy(args.team or _default_team(config))
        report = Report()
        progress = sys.stderr.isatty() or args.progress
        step = 64
        for start in range(0, len(rows), step):
            chunk = rows[start : start + step]
            decisions = await asyncio.gather(
                *(
                    guard.check_text(
                        r.text,
                        "outbound" if r.kind == "secret" else "inbound",
                        policy,
                        "eval",
                        "eval",
                    )
                    for r in chunk
                )
            )
            for row, decision in zip(chunk, decisions, strict=True):
                report.add(row.file, row.kind, row.positive, is_flagged(row.kind, decision.action))
            if progress:
                done = start + len(chunk)
                bar = "#" * (30 * done // len(rows))
                print(f"\r[{bar:30}] {done}/{len(rows)}", end="", file=sys.stderr, flush=True)
        if progress:
            print(file=sys.stderr)
        print(report.table())
        if args.json:
            print(json.dumps(report.as_dict()))
        return 0

    return _run_guard(config, run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reefgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"reefgate {__version__}")
    parser.add_argument(
        "--log-level",
        default="INFO",
        help="logging level (default INFO; DEBUG adds one access-log line per request)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument(
        "--config",
        type=Path,
        default=None,
        help="config directory (gateway.yaml, teams/*.yaml); default ./config if present, "
        "else the embedded default",
    )
    serve.add_argument("--host", default=None, help="override listen.host")
    serve.add_argument(
        "--port", type=int, default=None, help="override listen.port (0 = any free port)"
    )
    serve.set_defaults(func=cmd_serve)

    config = sub.add_parser("config", help="configuration tools")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    validate = config_sub.add_parser("validate", help="validate a config directory")
    validate.add_argument("dir", type=Path)
    validate.set_defaults(func=cmd_config_validate)

    check = sub.add_parser("check", help="classify text from stdin and print the verdict as JSON")
    check.add_argument("--config", type=Path, default=None, help="config directory")
    check.add_argument("--direction", choices=("outbound", "inbound"), default="outbound")
    check.add_argument("--team", default=None, help="team whose policy applies (default team)")
    check.add_argument(
        "--jsonl",
        action="store_true",
        help='read JSON lines {"text", "direction"?} and write one verdict per line, in order',
    )
    check.set_defaults(func=cmd_check)

    evaluate = sub.add_parser("eval", help="precision / recall / FP rate on labelled JSONL corpora")
    evaluate.add_argument("files", type=Path, nargs="+")
    evaluate.add_argument("--config", type=Path, default=None, help="config directory")
    evaluate.add_argument("--team", default=None)
    evaluate.add_argument(
        "--json", action="store_true", help="also print the figures as one JSON line"
    )
    evaluate.add_argument(
        "--progress", action="store_true", help="progress bar even when not a TTY"
    )
    evaluate.set_defaults(func=cmd_eval)

    audit = sub.add_parser("audit", help="audit log tools")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    verify = audit_sub.add_parser("verify", help="check the hash chain of an audit file")
    verify.add_argument("path", type=Path)
    verify.set_defaults(func=cmd_audit_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    from gateway.observe.audit import AuditLogError

    try:
        rc: int = args.func(args)
    except AuditLogError as exc:
        # The audit log or the fingerprint key cannot be opened or made.
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return rc


if __name__ == "__main__":
    sys.exit(main())
