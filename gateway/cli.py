"""The `reefgate` command: serve, check, eval, config validate, audit verify, reviews."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway import __version__

# Imported where used: the guard and the config schema take most of a second
# to import, which `reefgate reviews` and `--version` never need.
if TYPE_CHECKING:
    from aiohttp import web

    from gateway.config.loader import LoadedConfig
    from gateway.config.models import Admin
    from gateway.config.reload import ConfigFiles
    from gateway.guard.decision import Decision
    from gateway.guard.pipeline import Guard
    from gateway.guard.verdict import Direction
    from gateway.proxy.lifecycle import ServeLoop

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


class _ListenError(Exception):
    pass


def _http_url(addr: object) -> str | None:
    if not isinstance(addr, tuple):
        return None
    host = str(addr[0])
    return f"http://[{host}]:{addr[1]}" if ":" in host else f"http://{host}:{addr[1]}"


async def _start_admin(config: LoadedConfig, app: web.Application) -> web.AppRunner | None:
    """The reviewers' listener beside the agents', on the main app's reviews and audit log."""
    from aiohttp import web

    from gateway.app import AUDIT, ON_RELOAD, REVIEWS
    from gateway.proxy.server import GatewayRunner
    from gateway.review.admin import ADMIN, make_admin_app, tokens_configured

    if not tokens_configured(config):
        # Without a token every request would be refused: no port to open.
        log.info("admin listener off: no admin.token_env and no reviewers.tokens_env")

        def tokens_added(new: LoadedConfig) -> None:
            if tokens_configured(new):
                log.warning("config reload: admin tokens are set now; a restart opens admin.listen")

        app[ON_RELOAD].append(tokens_added)
        return None
    listen = config.gateway.admin.listen
    admin_app = make_admin_app(config, app[REVIEWS], app[AUDIT])
    # A reload's reviewer tokens (and teams) apply here as on the agents' port.
    app[ON_RELOAD].append(admin_app[ADMIN].tokens.update)
    # GatewayRunner: a malformed request is neither echoed nor logged, and here
    # it may carry a bearer token.
    runner = GatewayRunner(admin_app, shutdown_timeout=config.gateway.limits.drain_timeout_s)
    await runner.setup()
    try:
        await web.TCPSite(runner, listen.host, listen.port, reuse_address=True).start()
    except OSError as exc:
        await runner.cleanup()
        raise _ListenError(
            f"cannot listen for reviewers on {listen.host}:{listen.port} "
            f"(admin.listen): {exc.strerror or exc}"
        ) from exc
    return runner


async def _serve(
    config: LoadedConfig,
    host: str,
    port: int,
    *,
    config_dir: Path | None = None,
    files: ConfigFiles | None = None,
    worker: int = 0,
) -> None:
    """Serve until SIGTERM or SIGINT, then drain; `worker` is this process's --workers index."""
    from aiohttp import web

    from gateway.app import FORWARD, make_app
    from gateway.proxy.lifecycle import ServeLoop, drain
    from gateway.proxy.server import GatewayRunner

    app = make_app(config, worker=worker)
    # Requests in flight when a stop signal comes get this long to finish.
    runner = GatewayRunner(app, shutdown_timeout=config.gateway.limits.drain_timeout_s)
    await runner.setup()
    runners: list[web.AppRunner] = [runner]

    def stop_forward_proxy() -> None:
        forward_proxy = app.get(FORWARD)
        if forward_proxy is not None:
            forward_proxy.stop_listening()

    try:
        # Workers share the port (SO_REUSEPORT): the kernel gives each new
        # connection to one of them.
        site = web.TCPSite(
            runner, host, port, backlog=2048, reuse_address=True, reuse_port=worker > 0 or None
        )
        try:
            await site.start()
        except OSError as exc:
            raise _ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        # One reviewers' listener: with several workers, worker 1's.
        admin = await _start_admin(config, app) if worker <= 1 else None
        if admin is not None:
            runners.append(admin)
        parent = os.getppid() if worker > 0 else None
        serving = ServeLoop(app, config_dir, files, parent=parent)
        await _serve_until_stopped(config, runner, admin, serving, worker)
    finally:
        await drain(runners, stop_forward_proxy)


async def _serve_until_stopped(
    config: LoadedConfig,
    runner: web.AppRunner,
    admin: web.AppRunner | None,
    serving: ServeLoop,
    worker: int = 0,
) -> None:
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
    # Signals are handled from here on: a stop right after the lines below drains.
    serving.install()
    which = f"; worker {worker}" if worker > 0 else ""
    for addr in runner.addresses:
        if isinstance(addr, tuple):
            print(
                f"reefgate {__version__} listening on http://{addr[0]}:{addr[1]} "
                f"(config: {config.source}{which})",
                flush=True,
            )
    for addr in admin.addresses if admin is not None else ():
        url = _http_url(addr)
        if url is not None:
            print(f"reefgate admin listening on {url}", flush=True)
    from gateway.app import FORWARD

    forward = runner.app.get(FORWARD)
    if forward is not None:
        listen = config.gateway.forward_proxy.listen
        url = _http_url((listen.host, forward.port))
        print(f"reefgate forward proxy listening on {url} (HTTPS_PROXY)", flush=True)
    await serving.wait()


def cmd_serve(args: argparse.Namespace) -> int:
    from gateway.config.reload import ConfigFiles

    config_dir = args.config if args.config is not None else _default_config_dir()
    # Looked at before the config is read: an edit from here on is a change to reload.
    files = ConfigFiles(config_dir) if config_dir is not None else None
    config = _config_for(args)
    if config is None:
        return 2
    from gateway.observe.logs import configure_logging

    configure_logging(config.gateway.logging, level=getattr(args, "log_level", None))
    host = args.host or config.gateway.listen.host
    port = args.port if args.port is not None else config.gateway.listen.port
    if args.workers > 1:
        return _supervise(args, config, host, port)
    try:
        _run(
            lambda: _serve(
                config, host, port, config_dir=config_dir, files=files, worker=args.worker
            )
        )
    except _ListenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _supervise(args: argparse.Namespace, config: LoadedConfig, host: str, port: int) -> int:
    """`serve --workers N`: start N workers on one port and wait for them."""
    from gateway.observe.audit import fingerprint_key
    from gateway.proxy.certs import CAError, ensure_ca
    from gateway.proxy.lifecycle import reserve_port, supervise
    from gateway.review.store import StoreError

    # What the workers share is made here, once, before they could race to make it.
    fingerprint_key(config.gateway.audit, config.env)
    forward_proxy = config.gateway.forward_proxy
    if forward_proxy.enabled:
        if forward_proxy.listen.port == 0:
            print(
                "error: --workers needs a fixed forward_proxy.listen.port, not 0", file=sys.stderr
            )
            return 2
        try:
            ensure_ca(forward_proxy.ca_dir)
        except (CAError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        _run(lambda: _prepare_reviews(config))
    except StoreError as exc:
        print(f"error: review store: {exc}", file=sys.stderr)
        return 2
    # Port 0 would give each worker a port of its own: one is chosen here and held.
    reserved = reserve_port(host) if port == 0 else None
    if reserved is not None:
        port = int(reserved.getsockname()[1])

    def argv_for(worker: int) -> list[str]:
        argv = [sys.executable, "-m", "gateway"]
        if args.log_level is not None:
            argv += ["--log-level", str(args.log_level)]
        argv += ["serve", "--host", host, "--port", str(port), "--worker", str(worker)]
        if args.config is not None:
            argv += ["--config", str(args.config)]
        return argv

    try:
        return supervise(argv_for, args.workers)
    finally:
        if reserved is not None:
            reserved.close()


async def _prepare_reviews(config: LoadedConfig) -> None:
    """Open and close every review store: the schema exists before N workers open them."""
    from gateway.review.gate import Reviews

    reviews = Reviews(config)
    await reviews.open()
    await reviews.close()


def cmd_config_validate(args: argparse.Namespace) -> int:
    from gateway.config.loader import collect

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


def _audit_files(given: Sequence[str]) -> tuple[list[Path], list[str]]:
    """The files that paths, directories (their *.jsonl) and glob patterns name; what named none."""
    import glob

    found: list[Path] = []
    unmatched: list[str] = []
    for name in given:
        path = Path(name)
        if path.is_dir():
            files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        elif path.exists() or not glob.has_magic(name):
            files = [path]  # a missing file is reported by verify
        else:
            files = sorted(Path(p) for p in glob.glob(name) if Path(p).is_file())
        if not files:
            unmatched.append(name)
        found.extend(f for f in files if f not in found)
    return found, unmatched


def cmd_audit_verify(args: argparse.Namespace) -> int:
    from gateway.observe.audit import verify

    paths, unmatched = _audit_files(args.paths)
    for name in unmatched:
        print(f"error: no audit file in {name}", file=sys.stderr)
    broken = 0
    for path in paths:
        result = verify(path)
        if result.ok:
            print(f"{path}: ok, {result.entries} entries, head {result.head or '(empty)'}")
            continue
        broken += 1
        where = f" at line {result.line}" if result.line is not None else ""
        print(f"{path}: BROKEN{where}: {result.error}", file=sys.stderr)
    if len(paths) > 1:
        print(f"{len(paths) - broken} of {len(paths)} chains ok")
    return 1 if broken or unmatched else 0


def cmd_ca_init(args: argparse.Namespace) -> int:
    from gateway.proxy.certs import CAError, init_ca

    try:
        files = init_ca(args.dir)
    except (CAError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"created {files.cert} and {files.key} (mode 0600; keep it out of agents' reach)")
    return 0


def cmd_ca_show(args: argparse.Namespace) -> int:
    config = _config_for(args)
    if config is None:
        return 2
    from gateway.proxy.certs import CAFiles

    proxy = config.gateway.forward_proxy
    cert = CAFiles.in_dir(proxy.ca_dir).cert.resolve()
    host = proxy.listen.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    print(f"CA certificate: {cert}{'' if cert.exists() else ' (made on first start)'}")
    if not proxy.enabled:
        print("forward proxy: off (forward_proxy.enabled: false)")
    print("An agent uses the forward proxy with:")
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"):
        print(f"  export {name}={cert}")
    print(f"  export HTTPS_PROXY=http://{host}:{proxy.listen.port}")
    print(f"  export HTTP_PROXY=http://{host}:{proxy.listen.port}")
    return 0


def _config_for(args: argparse.Namespace) -> LoadedConfig | None:
    from gateway.config.loader import load
    from gateway.errors import ConfigError

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


class _ReviewsError(Exception):
    """A `reefgate reviews` failure: the line to print and the exit code."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


_ADMIN_TOKEN_ENV = "REEFGATE_ADMIN_TOKEN"
_ADMIN_TIMEOUT_S = 10.0


def _admin_settings(args: argparse.Namespace) -> Admin:
    """gateway.yaml's admin block, read without resolving any other env var.

    A reviewer's shell need not hold the provider keys the full config names.
    """
    import yaml
    from pydantic import ValidationError

    from gateway.config.models import GatewayConfig

    config_dir = args.config if args.config is not None else _default_config_dir()
    if config_dir is None:
        return GatewayConfig().admin
    path = config_dir / "gateway.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return GatewayConfig.model_validate(raw).admin
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise _ReviewsError(f"cannot read {path}: {exc}") from exc
    except ValidationError as exc:
        raise _ReviewsError(f"{path} is not valid (reefgate config validate says why)") from exc


def _admin_target(args: argparse.Namespace) -> tuple[str, str]:
    """The admin API's base URL and the bearer token to send it."""
    admin: Admin | None = None
    url = args.admin_url
    if url is None:
        admin = _admin_settings(args)
        host = admin.listen.host
        # A wildcard address is where the gateway listens, not where to connect.
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
        url = _http_url((host, admin.listen.port))
    token = args.token or os.environ.get(_ADMIN_TOKEN_ENV, "")
    if not token:
        admin = admin or _admin_settings(args)
        if admin.token_env:
            token = os.environ.get(admin.token_env, "")
    if not token:
        raise _ReviewsError(
            f"no token: pass --token, or set {_ADMIN_TOKEN_ENV} "
            "(or the variable named by admin.token_env)"
        )
    return str(url).rstrip("/"), token


def _admin_call(
    args: argparse.Namespace, method: str, path: str, body: object = None
) -> tuple[int, Any]:
    """(status, JSON) of one admin API request; connection trouble is a _ReviewsError."""
    import http.client
    import urllib.parse

    base, token = _admin_target(args)
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _ReviewsError(f"--admin-url must be an http:// or https:// URL, not {base!r}")
    # http.client, not urllib: no proxy from the environment and no redirect
    # may carry the token anywhere but where it was sent.
    conn_type = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    conn = conn_type(parts.hostname, parts.port, timeout=_ADMIN_TIMEOUT_S)
    try:
        conn.request(method, parts.path + path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise _ReviewsError(f"cannot reach the admin API at {base}: {reason}") from exc
    finally:
        conn.close()
    try:
        return response.status, json.loads(raw)
    except ValueError as exc:
        raise _ReviewsError(
            f"the admin API at {base} answered HTTP {response.status} without JSON"
        ) from exc


def _admin_failure(status: int, data: Any, review_id: str | None = None) -> _ReviewsError:
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    text = _printable(str(message)) if message else f"HTTP {status}"
    if status == 401:
        return _ReviewsError(f"the admin API refused the token: {text}")
    if status == 404:
        return _ReviewsError(f"no review {_printable(review_id or '')}", 1)
    if status == 409:
        by = error.get("decided_by") if isinstance(error, dict) else None
        return _ReviewsError(text + (f" (by {_printable(str(by))})" if by else ""), 1)
    if status in (400, 403):
        return _ReviewsError(text)
    return _ReviewsError(f"the admin API answered {status}: {text}")


def _printable(text: str, keep_newlines: bool = False) -> str:
    """Text from a review, safe for a terminal.

    A review's reason and excerpt quote the held request, which an attacker
    may have written: control and format characters (escape sequences, bidi
    overrides) are shown as escapes instead of acting on the terminal.
    """
    import unicodedata

    out = []
    for ch in text:
        if keep_newlines and ch == "\n":
            out.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def _when(seconds: object) -> str:
    if not isinstance(seconds, int | float):
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _review_id(value: str) -> str:
    import urllib.parse

    return urllib.parse.quote(value, safe="")


def cmd_reviews_list(args: argparse.Namespace) -> int:
    import urllib.parse

    query = {k: v for k, v in (("status", args.status), ("team", args.team)) if v}
    path = "/admin/reviews" + ("?" + urllib.parse.urlencode(query) if query else "")
    status, data = _admin_call(args, "GET", path)
    if status != 200 or not isinstance(data, list):
        raise _admin_failure(status, data)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    if not data:
        print("no reviews", file=sys.stderr)
        return 0
    rows = [("ID", "STATUS", "TEAM", "CATEGORY", "CREATED", "SOURCE -> DESTINATION")]
    for r in data:
        rows.append(
            (
                str(r.get("id")),
                str(r.get("status")),
                str(r.get("team")),
                str(r.get("category")),
                _when(r.get("created")),
                f"{r.get('source')} -> {r.get('destination')}",
            )
        )
    widths = [max(len(_printable(row[i])) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [_printable(cell).ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, _printable(row[-1])]))
    return 0


def _print_review(r: dict[str, Any]) -> None:
    fields = [
        ("id", r.get("id")),
        ("status", r.get("status")),
        ("team", r.get("team")),
        ("category", r.get("category")),
        ("reason", r.get("reason")),
        ("direction", r.get("direction")),
        ("source", r.get("source")),
        ("destination", r.get("destination")),
        ("created", _when(r.get("created"))),
        ("digest", r.get("digest")),
        ("policy version", r.get("policy_version")),
    ]
    if r.get("decided_by") is not None:
        fields += [("decided by", r.get("decided_by")), ("decided at", _when(r.get("decided_at")))]
    if r.get("note"):
        fields.append(("note", r.get("note")))
    for name, value in fields:
        print(f"{name + ':':16}{_printable(str(value))}")
    print("excerpt (secrets replaced):")
    for line in _printable(str(r.get("excerpt", "")), keep_newlines=True).splitlines() or [""]:
        print(f"  {line}")
    findings = r.get("findings") or []
    print("findings:" + ("" if findings else " none"))
    for f in findings:
        parts = (f.get("kind"), f.get("fingerprint"), f.get("where"))
        print("  " + "  ".join(_printable(str(p)) for p in parts))


def cmd_reviews_show(args: argparse.Namespace) -> int:
    status, data = _admin_call(args, "GET", f"/admin/reviews/{_review_id(args.id)}")
    if status != 200 or not isinstance(data, dict):
        raise _admin_failure(status, data, args.id)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        _print_review(data)
    return 0


def cmd_reviews_decide(args: argparse.Namespace) -> int:
    action = args.reviews_command  # approve or deny
    body = {"note": args.note} if args.note else {}
    path = f"/admin/reviews/{_review_id(args.id)}/{action}"
    status, data = _admin_call(args, "POST", path, body)
    if status != 200 or not isinstance(data, dict):
        raise _admin_failure(status, data, args.id)
    print(
        f"{_printable(str(data.get('status')))} {_printable(str(data.get('id')))} "
        f"(decided by {_printable(str(data.get('decided_by')))})"
    )
    return 0


def _reviews_command(
    command: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except _ReviewsError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return exc.code

    return run


def _add_reviews_parser(sub: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        type=Path,
        default=None,
        help="config directory whose admin.listen and admin.token_env are the defaults "
        "(default ./config if present)",
    )
    common.add_argument(
        "--admin-url", default=None, help="the admin listener (default: from admin.listen)"
    )
    common.add_argument(
        "--token",
        default=None,
        help=f"bearer token (default ${_ADMIN_TOKEN_ENV}, else the env var named by "
        "admin.token_env); on the command line it is visible to other local users",
    )
    reviews = sub.add_parser("reviews", help="list, show, approve and deny held requests")
    reviews_sub = reviews.add_subparsers(dest="reviews_command", required=True)

    listing = reviews_sub.add_parser("list", parents=[common], help="list reviews, newest first")
    listing.add_argument(
        "--status",
        choices=("pending", "approved", "denied"),
        default=None,
        help="only reviews in this state (default: every state)",
    )
    listing.add_argument("--team", default=None, help="only this team's reviews")
    listing.add_argument("--json", action="store_true", help="print the API's JSON")
    listing.set_defaults(func=_reviews_command(cmd_reviews_list))

    show = reviews_sub.add_parser("show", parents=[common], help="one review in full")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="print the API's JSON")
    show.set_defaults(func=_reviews_command(cmd_reviews_show))

    for action, text in (
        ("approve", "let the held request through"),
        ("deny", "refuse the held request"),
    ):
        decide = reviews_sub.add_parser(action, parents=[common], help=text)
        decide.add_argument("id")
        decide.add_argument("--note", default=None, help="why (stored with the review)")
        decide.set_defaults(func=_reviews_command(cmd_reviews_decide))


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}")
    return number


def cmd_reef_conformance(args: argparse.Namespace) -> int:
    from gateway.peer.conformance import format_report, run_directory

    if not args.dir.is_dir():
        print(f"error: {args.dir} is not a directory", file=sys.stderr)
        return 2
    reports = run_directory(args.dir)
    print(format_report(str(args.dir), reports))
    return 0 if all(r.ok for r in reports) else 1


def _reef_state_dir(args: argparse.Namespace) -> Path | None:
    if args.state_dir is not None:
        path: Path = args.state_dir
        return path
    config = _config_for(args)
    if config is None:
        return None
    return config.gateway.peer.reef.state_dir


def cmd_reef_init(args: argparse.Namespace) -> int:
    from gateway.peer.errors import InvalidInput
    from gateway.peer.state import StateError, init_identity

    state_dir = _reef_state_dir(args)
    if state_dir is None:
        return 2
    try:
        public = init_identity(state_dir, args.handle, args.epoch)
    except (StateError, InvalidInput) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    keys = public.to_dict()
    print(f"identity: {keys['peer']}")
    print(f"ed25519: {keys['ed25519']}")
    print(f"x25519: {keys['x25519']}")
    print(f"fingerprint: {public.fingerprint}")
    print(f"state: {state_dir} (private keys mode 0600)")
    print(
        "a peer pins this claw with: reefgate reef peer add "
        # --opt=value: a base64url key may start with "-".
        f"'{keys['peer']}' --ed25519={keys['ed25519']} --x25519={keys['x25519']}"
    )
    return 0


def cmd_reef_show(args: argparse.Namespace) -> int:
    from gateway.peer.state import StateError, load_identity, load_pins

    state_dir: Path
    configured: dict[str, dict[str, str]] = {}
    if args.state_dir is not None:
        state_dir = args.state_dir
    else:
        config = _config_for(args)
        if config is None:
            return 2
        reef = config.gateway.peer.reef
        state_dir = reef.state_dir
        configured = {k: v.model_dump() for k, v in reef.peers.items()}
    try:
        public = load_identity(state_dir).public
        pins = load_pins(state_dir, configured)
    except StateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    keys = public.to_dict()
    print(f"identity: {keys['peer']}")
    print(f"ed25519: {keys['ed25519']}")
    print(f"x25519: {keys['x25519']}")
    print(f"fingerprint: {public.fingerprint}")
    print(f"pinned peers: {len(pins)}")
    for pinned in pins.all():
        print(f"  {pinned.peer}  {pinned.fingerprint}")
    return 0


def cmd_reef_peer_add(args: argparse.Namespace) -> int:
    from gateway.peer.errors import InvalidInput
    from gateway.peer.state import StateError, add_peer

    state_dir = _reef_state_dir(args)
    if state_dir is None:
        return 2
    try:
        public = add_peer(state_dir, args.address, args.ed25519, args.x25519)
    except (StateError, InvalidInput) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"pinned {public.peer}: fingerprint {public.fingerprint}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reefgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"reefgate {__version__}")
    parser.add_argument(
        "--log-level",
        default=None,
        help="logging level (default INFO, or serve's logging.level; "
        "DEBUG adds one access-log line per request)",
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
    serve.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="worker processes serving the port together (default 1; each writes its own "
        "audit chain, audit.jsonl -> audit.w1.jsonl, audit.w2.jsonl, ...)",
    )
    # Set by `--workers N` for each worker process it starts: its index, 1..N.
    serve.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
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
    verify = audit_sub.add_parser(
        "verify", help="check the hash chains of audit files (one per serve worker)"
    )
    verify.add_argument(
        "paths",
        nargs="+",
        metavar="path",
        help="an audit file, a directory (its *.jsonl files) or a glob pattern such as "
        "'var/audit*.jsonl'",
    )
    verify.set_defaults(func=cmd_audit_verify)

    ca = sub.add_parser("ca", help="the forward proxy's certificate authority")
    ca_sub = ca.add_subparsers(dest="ca_command", required=True)
    ca_init = ca_sub.add_parser("init", help="create DIR/ca.pem and DIR/ca-key.pem (mode 0600)")
    ca_init.add_argument("dir", type=Path)
    ca_init.set_defaults(func=cmd_ca_init)
    ca_show = ca_sub.add_parser(
        "show", help="print the CA certificate's path and what an agent needs to use the proxy"
    )
    ca_show.add_argument("--config", type=Path, default=None, help="config directory")
    ca_show.set_defaults(func=cmd_ca_show)

    reef = sub.add_parser("reef", help="the Reef claw-to-claw protocol")
    reef_sub = reef.add_subparsers(dest="reef_command", required=True)
    conformance = reef_sub.add_parser(
        "conformance", help="run every case of the Reef reference vectors in DIR"
    )
    conformance.add_argument("dir", type=Path, help="vector directory (as ../shared/reef-vectors)")
    conformance.set_defaults(func=cmd_reef_conformance)
    reef_common = argparse.ArgumentParser(add_help=False)
    reef_common.add_argument("--config", type=Path, default=None, help="config directory")
    reef_common.add_argument(
        "--state-dir", type=Path, default=None, help="override peer.reef.state_dir"
    )
    reef_init = reef_sub.add_parser(
        "init", parents=[reef_common], help="create this claw's identity in the state dir"
    )
    reef_init.add_argument("--handle", required=True)
    reef_init.add_argument("--epoch", type=_positive, default=1)
    reef_init.set_defaults(func=cmd_reef_init)
    reef_show = reef_sub.add_parser(
        "show", parents=[reef_common], help="print this claw's public identity and pinned peers"
    )
    reef_show.set_defaults(func=cmd_reef_show)
    reef_peer = reef_sub.add_parser("peer", help="pinned peers")
    reef_peer_sub = reef_peer.add_subparsers(dest="reef_peer_command", required=True)
    peer_add = reef_peer_sub.add_parser(
        "add", parents=[reef_common], help="pin a peer's keys (only pinned peers are talked to)"
    )
    peer_add.add_argument("address", help="handle#epoch")
    peer_add.add_argument("--ed25519", required=True, help="Ed25519 public key, base64url")
    peer_add.add_argument("--x25519", required=True, help="X25519 public key, base64url")
    peer_add.set_defaults(func=cmd_reef_peer_add)

    _add_reviews_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level or "INFO").upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        rc: int = args.func(args)
    except OSError as exc:
        from gateway.observe.audit import AuditLogError

        if not isinstance(exc, AuditLogError):
            raise
        # The audit log or the fingerprint key cannot be opened or made.
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return rc


if __name__ == "__main__":
    sys.exit(main())
