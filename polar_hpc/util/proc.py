"""Processes by pid: liveness, start times (against pid reuse), whole-tree signalling and killing.

Every tree operation snapshots the tree from one scan of ``/proc`` before signalling: once a parent dies its
children are reparented and can no longer be found below it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from polar_hpc.log import get_logger

log = get_logger("proc")

KILL_GRACE_S = 3.0
"""Default seconds between SIGTERM and SIGKILL."""


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time in clock ticks since boot) of a pid, None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # field 2 (comm) may hold spaces and parentheses: split after the last ')'
    rest = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(rest[1]), rest[0].decode(), int(rest[19])  # fields 4, 3 and 22 of proc(5)
    except (IndexError, ValueError):
        return None


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    st = _stat(pid)
    return st is not None and st[1] not in ("Z", "X")


def start_time(pid: int) -> int | None:
    """The process's start time (``/proc/<pid>/stat`` field 22); with the pid it names one process for good."""
    st = _stat(pid)
    return None if st is None else st[2]


def same_process(pid: int, started: int | None) -> bool:
    """``pid`` is alive and still the process that had start time ``started`` (not a reused pid).
    ``started=None`` (unknown) never matches: an unverifiable pid is not ours to signal."""
    st = _stat(pid)
    return started is not None and st is not None and st[1] not in ("Z", "X") and st[2] == started


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


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


def tree(root: int) -> list[int]:
    """``root`` and its live descendants (empty when ``root`` is gone)."""
    return [root, *descendants(root)] if alive(root) else []


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def signal_tree(root: int, sig: int) -> list[int]:
    """Send ``sig`` to ``root`` and all its descendants; returns the pids signalled."""
    pids = tree(root)
    signal_all(pids, sig)
    return pids


def kill_tree_now(root: int) -> None:
    """SIGKILL a tree immediately (synchronous: for interpreter exit and error paths)."""
    signal_tree(root, signal.SIGKILL)


def _snapshot(root: int) -> dict[int, int]:
    """pid -> start time of ``root``'s live tree."""
    out: dict[int, int] = {}
    for pid in tree(root):
        started = start_time(pid)
        if started is not None:
            out[pid] = started
    return out


def _left(root: int, seen: dict[int, int]) -> list[int]:
    """Track ``root``'s tree while it lives (children forked after the first snapshot included); return the
    tracked processes still alive. Start times keep a reused pid out."""
    if alive(root):
        seen.update(_snapshot(root))
    return [p for p, started in seen.items() if same_process(p, started)]


def _escalate(root: int, left: list[int], grace_s: float) -> None:
    survivors = left + [d for p in left for d in descendants(p)]
    log.warning("pid %d: %d process(es) ignored SIGTERM for %.1fs, sending SIGKILL", root, len(survivors), grace_s)
    signal_all(survivors, signal.SIGKILL)


class _Stop:
    """One tree stop, stepped by a sync or an async poll loop."""

    def __init__(self, root: int, grace_s: float, term_all: bool) -> None:
        self.root, self.grace_s = root, grace_s
        self.seen = _snapshot(root)
        signal_all(list(self.seen) if term_all else [root], signal.SIGTERM)
        self.swept = term_all
        self.deadline = time.monotonic() + grace_s
        self.killed_at: float | None = None

    def step(self) -> bool | None:
        """None: poll again; True: the tree exited within the grace; False: it was SIGKILLed (and is gone)."""
        left = _left(self.root, self.seen)
        if self.killed_at is not None:
            # SIGKILL is not instant; report the tree gone only once it is (bounded: unkillable D-state aside)
            return False if not left or time.monotonic() > self.killed_at + KILL_GRACE_S else None
        if not left:
            return True
        if time.monotonic() >= self.deadline:
            _escalate(self.root, left, self.grace_s)
            self.killed_at = time.monotonic()
            return None
        if not self.swept and not alive(self.root):
            self.swept = True  # the supervisor is gone: its leftovers get SIGTERM and a short grace
            signal_all(left, signal.SIGTERM)
            self.deadline = min(self.deadline, time.monotonic() + KILL_GRACE_S)
        return None


def stop_tree(root: int, *, grace_s: float = KILL_GRACE_S, term_all: bool = True, poll_s: float = 0.05) -> bool:
    """Blocking: SIGTERM, then SIGKILL what is left of ``root``'s tree after ``grace_s``.

    ``term_all=False`` sends SIGTERM to ``root`` only (a supervisor that drains its own children); its
    descendants, tracked while it runs, get SIGTERM once it has exited and SIGKILL at the deadline.
    Pids are tracked with their start times, so a reused pid is never signalled.
    True when the whole tree exited before the deadline.
    """
    stop = _Stop(root, grace_s, term_all)
    while (done := stop.step()) is None:
        time.sleep(poll_s)
    return done


async def kill_tree(root: int, *, grace_s: float = KILL_GRACE_S) -> None:
    """Async :func:`stop_tree` (SIGTERM to the whole tree at once, SIGKILL after ``grace_s``)."""
    stop = _Stop(root, grace_s, term_all=True)
    while stop.step() is None:
        await asyncio.sleep(0.05)


def write_pid_file(path: Path, pid: int) -> None:
    """``<pid> <start time>``, atomically, so a later reader can tell the process from a reused pid."""
    from polar_hpc.util.fs import write_atomic

    write_atomic(path, f"{pid} {start_time(pid) or ''}".strip().encode())


def read_pid_file(path: Path) -> tuple[int, int | None] | None:
    """(pid, start time or None for an old one-field file); None when missing or unreadable."""
    try:
        fields = path.read_text().split()
        return int(fields[0]), (int(fields[1]) if len(fields) > 1 else None)
    except (OSError, ValueError, IndexError):
        return None
