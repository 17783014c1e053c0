"""Run one command as its own process group; on timeout or cancellation kill its whole tree by pid."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import BinaryIO

from polar_hpc.log import get_logger
from polar_hpc.runtime.base import ExecResult
from polar_hpc.util.proc import KILL_GRACE_S, alive, descendants, kill_tree, kill_tree_now

__all__ = ["DRAIN_S", "KILL_GRACE_S", "alive", "descendants", "kill_tree", "kill_tree_now", "run_command"]

log = get_logger("runtime")

DRAIN_S = 2.0
"""After the tree is dead, how long to wait for pipe EOF (a daemonised grandchild may hold the pipe)."""
MAX_CAPTURE = 4 * 1024 * 1024
"""Bytes of stdout / stderr kept in memory (the tail); the log file gets everything."""


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _Sink:
    """Keeps the tail of one stream in memory and mirrors every chunk into the log file."""

    def __init__(self, log_file: BinaryIO | None) -> None:
        self.buf = bytearray()
        self.log_file = log_file

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk
        if len(self.buf) > MAX_CAPTURE:
            del self.buf[: len(self.buf) - MAX_CAPTURE]
        if self.log_file is not None:
            self.log_file.write(chunk)
            self.log_file.flush()

    def text(self) -> str:
        return self.buf.decode("utf-8", errors="replace")


async def _exited(pid: int) -> None:
    """Return when ``pid`` has exited (a pidfd: unlike ``Process.wait`` it does not wait for pipe EOF)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def ready() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(fd, ready)
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def _pump(stream: asyncio.StreamReader, sink: _Sink) -> None:
    while chunk := await stream.read(65536):
        sink.feed(chunk)


async def run_command(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path | None = None,
    timeout_s: float | None = None,
    log_path: Path | None = None,
    live: set[int] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> ExecResult:
    """Run ``argv`` in a new session (own process group); ``live`` holds its pid while it runs; ``pass_fds`` are
    inherited by it (at the same numbers)."""
    t0 = time.monotonic()
    log_file = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = open(log_path, "ab")  # noqa: SIM115 - closed in finally
    out, err = _Sink(log_file), _Sink(log_file)
    try:
        spawn = asyncio.ensure_future(asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
            pass_fds=pass_fds,
        ))
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # cancelled while spawning: asyncio would SIGKILL only the root, possibly before a sandbox (bwrap
            # forks its namespace init at once) has armed --die-with-parent, leaving the fork behind; let the
            # spawn finish, then stop the whole tree and the process group
            proc = await asyncio.wait_for(spawn, KILL_GRACE_S)
            await kill_tree(proc.pid)
            _killpg(proc.pid)
            raise
        if live is not None:
            live.add(proc.pid)
        assert proc.stdout is not None and proc.stderr is not None
        pumps = asyncio.gather(_pump(proc.stdout, out), _pump(proc.stderr, err))
        pumps.add_done_callback(lambda f: f.cancelled() or f.exception())
        timed_out = False
        try:
            await asyncio.wait_for(_exited(proc.pid), timeout_s)
        except TimeoutError:
            timed_out = True
            await kill_tree(proc.pid)
        except BaseException:
            await asyncio.shield(kill_tree(proc.pid))
            pumps.cancel()
            raise
        finally:
            if live is not None:
                live.discard(proc.pid)
        _killpg(proc.pid)  # stragglers left in the command's process group
        try:
            await asyncio.wait_for(pumps, DRAIN_S)
        except TimeoutError:
            log.warning("pid %d: output pipes still open %.1fs after the process ended", proc.pid, DRAIN_S)
        rc = await asyncio.wait_for(proc.wait(), KILL_GRACE_S + 1.0)
        return ExecResult(
            returncode=rc,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            duration_s=time.monotonic() - t0,
        )
    finally:
        if log_file is not None:
            log_file.close()
