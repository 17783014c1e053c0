"""Run one command as its own process group; on timeout or cancellation kill its whole tree by pid."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from polar_hpc.log import get_logger
from polar_hpc.runtime.base import ExecResult

log = get_logger("runtime")

KILL_GRACE_S = 3.0
"""Seconds between SIGTERM and SIGKILL."""
DRAIN_S = 2.0
"""After the tree is dead, how long to wait for pipe EOF (a daemonised grandchild may hold the pipe)."""
MAX_CAPTURE = 4 * 1024 * 1024
"""Bytes of stdout / stderr kept in memory (the tail); the log file gets everything."""


def _stat(pid: int) -> tuple[int, str] | None:
    """(ppid, state) of a live pid, None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    rest = raw[raw.rfind(b")") + 2 :].split()
    return int(rest[1]), rest[0].decode()


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] not in ("Z", "X")


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (not ``root`` itself), from one scan of /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        st = _stat(pid)
        if st is not None and st[1] not in ("Z", "X"):
            children.setdefault(st[0], []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


async def kill_tree(root: int, *, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM ``root`` and all its descendants, then SIGKILL what is left after ``grace_s``.

    The tree is snapshotted before signalling: once a parent dies its children are reparented and
    can no longer be found below ``root``.
    """
    tree = [root, *descendants(root)] if alive(root) else []
    if not tree:
        return
    _signal_all(tree, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not any(alive(p) for p in tree):
            return
        await asyncio.sleep(0.05)
    survivors = [p for p in tree if alive(p)]
    survivors += [d for p in survivors for d in descendants(p)]
    log.warning("pid %d: %d process(es) ignored SIGTERM for %.1fs, sending SIGKILL", root, len(survivors), grace_s)
    _signal_all(survivors, signal.SIGKILL)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_tree_now(root: int) -> None:
    """SIGKILL a tree immediately (synchronous: for interpreter exit and error paths)."""
    if alive(root):
        _signal_all([root, *descendants(root)], signal.SIGKILL)


class _Sink:
    """Keeps the tail of one stream in memory and mirrors every chunk into the log file."""

    def __init__(self, log_file: object | None) -> None:
        self.buf = bytearray()
        self.log_file = log_file

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk
        if len(self.buf) > MAX_CAPTURE:
            del self.buf[: len(self.buf) - MAX_CAPTURE]
        if self.log_file is not None:
            self.log_file.write(chunk)  # type: ignore[attr-defined]
            self.log_file.flush()  # type: ignore[attr-defined]

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
) -> ExecResult:
    """Run ``argv`` in a new session (own process group); ``live`` holds its pid while it runs."""
    t0 = time.monotonic()
    log_file = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = open(log_path, "ab")  # noqa: SIM115 - closed in finally
    out, err = _Sink(log_file), _Sink(log_file)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
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
