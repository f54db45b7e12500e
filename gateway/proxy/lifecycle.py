"""How `reefgate serve` runs: signals, draining, config reloads and worker processes.

* SIGTERM or SIGINT: the listeners close (a new connection is refused), the
  requests and streams in flight get up to ``limits.drain_timeout_s`` to
  finish, then the process exits 0.
* SIGHUP, or a change of the config files (polled once a second): the config
  is loaded again and, if valid, installed (``gateway.app.reload``).
* ``--workers N`` (N > 1): this process supervises N worker processes that
  listen on the same port (SO_REUSEPORT, the kernel spreads connections);
  it passes SIGTERM, SIGINT and SIGHUP on, and exits when they have exited,
  non-zero if one failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from aiohttp import web

from gateway.config.reload import ConfigFiles
from gateway.observe.logs import log_failure

__all__ = ["POLL_INTERVAL_S", "ServeLoop", "drain", "reserve_port", "supervise"]

log = logging.getLogger("reefgate")

# How often the config files are looked at.
POLL_INTERVAL_S = 1.0

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class ServeLoop:
    """Waits for a stop signal, reloading the config on SIGHUP and on file changes meanwhile."""

    def __init__(
        self,
        app: web.Application,
        config_dir: Path | None,
        files: ConfigFiles | None = None,
        *,
        parent: int | None = None,
        interval: float = POLL_INTERVAL_S,
    ) -> None:
        self._app = app
        self._dir = config_dir
        self._files = files if files is not None or config_dir is None else ConfigFiles(config_dir)
        # A worker's supervisor: if it dies, the worker stops too rather than run orphaned.
        self._parent = parent
        self._interval = interval
        self._stop = asyncio.Event()
        self._watching: asyncio.Future[None] | None = None

    def stop(self) -> None:
        if not self._stop.is_set():
            log.info("stopping: no new connections; draining the requests in flight")
        self._stop.set()

    def reload(self, why: str) -> bool:
        from gateway.app import reload

        if self._dir is None:
            log.warning("%s: no config directory (the embedded default): nothing to reload", why)
            return False
        log.info("%s: reloading the config from %s", why, self._dir)
        if self._files is not None:
            self._files.changed()  # what is read now is the baseline for the next look
        try:
            return reload(self._app, self._dir)
        except Exception as exc:
            # A bug in a reload must not stop the watching, or the serving.
            log_failure(log, "config reload", exc)
            return False

    def install(self) -> None:
        """Take over the signals and start watching the config files."""
        loop = asyncio.get_running_loop()
        for sig in _STOP_SIGNALS:
            loop.add_signal_handler(sig, self.stop)
        loop.add_signal_handler(signal.SIGHUP, self.reload, "SIGHUP")
        self._watching = asyncio.ensure_future(self.watch())

    async def wait(self) -> None:
        """Until SIGTERM or SIGINT (``install`` first)."""
        try:
            await self._stop.wait()
        finally:
            if self._watching is not None:
                self._watching.cancel()
            # No reload during the drain; a second SIGTERM (say, a terminal's
            # SIGINT and its supervisor's) changes nothing, so the handlers stay.
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)

    async def watch(self) -> None:
        """Reload when the config files change; stop when the supervisor is gone."""
        while True:
            await asyncio.sleep(self._interval)
            if self._parent is not None and os.getppid() != self._parent:
                log.error("the supervising process is gone; stopping")
                self.stop()
                return
            if self._files is not None and self._files.changed():
                self.reload("config files changed")


async def drain(
    runners: Sequence[web.AppRunner], before: Callable[[], None] = lambda: None
) -> None:
    """Close every runner's listeners at once, then let each finish its requests in flight.

    ``before`` runs once the listeners are closed (it closes other listeners);
    each runner waits for its requests up to its ``shutdown_timeout``. The
    first runner's app owns the resources the others use, so it is cleaned
    up last.
    """
    for runner in runners:
        for site in list(runner.sites):
            await site.stop()
    before()
    for runner in reversed(runners):
        await runner.cleanup()


def reserve_port(host: str) -> socket.socket:
    """A bound (not listening) SO_REUSEPORT socket on a free port, for N workers to share.

    Workers given port 0 would each get a different port; held open, this
    keeps the chosen port for them, and it takes no connections itself.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, 0))
    except BaseException:
        sock.close()
        raise
    return sock


def supervise(argv_for: Callable[[int], list[str]], workers: int) -> int:
    """Run workers 1..N (``argv_for(i)``) until they exit; the exit code of the first that failed.

    SIGTERM, SIGINT and SIGHUP are passed on to every worker. A worker that
    exits by itself (a failure, or a signal sent to it alone) makes the others
    stop (SIGTERM: they drain) so the set is never left half-serving.
    """
    procs: list[subprocess.Popen[bytes]] = []
    stopping = False

    def send(signum: int) -> None:
        for proc in procs:
            if proc.returncode is None:
                # os.kill, not send_signal: its poll() could reap the worker
                # behind the os.wait() below.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signum)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if signum in _STOP_SIGNALS:
            stopping = True
        send(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in _FORWARDED}
    try:
        failed = 0
        try:
            for index in range(1, workers + 1):
                if stopping:
                    break
                # A worker starts with SIGHUP ignored (kept across exec) until
                # it handles it itself: a reload then must not kill one still starting.
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
                try:
                    procs.append(subprocess.Popen(argv_for(index)))  # noqa: S603 (our argv)
                finally:
                    signal.signal(signal.SIGHUP, on_signal)
        except OSError as exc:
            log.error("cannot start worker %d: %s", len(procs) + 1, exc)
            failed = 1
            stopping = True
        if stopping:
            send(signal.SIGTERM)  # the ones started after the signal came, too
        else:
            log.info(
                "supervising %d workers (pids %s)",
                workers,
                ", ".join(str(p.pid) for p in procs),
            )
        by_pid = {proc.pid: (index, proc) for index, proc in enumerate(procs, 1)}
        while any(proc.returncode is None for proc in procs):
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            if pid not in by_pid:
                continue
            index, proc = by_pid[pid]
            proc.returncode = code = os.waitstatus_to_exitcode(status)
            # Killed by a stop signal passed on before it could drain (still
            # starting): stopped as asked, not failed.
            asked = stopping and code in (-signal.SIGTERM, -signal.SIGINT)
            if code != 0 and not asked and not failed:
                failed = code if code > 0 else 1
            if not stopping:
                log.error("worker %d (pid %d) exited with %d; stopping the rest", index, pid, code)
                stopping = True
                send(signal.SIGTERM)
        return failed
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
