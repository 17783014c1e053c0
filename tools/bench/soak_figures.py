"""What ``bench_soak.py`` measures, apart from driving the run: each component process's memory, open files,
threads and live descendants read from ``/proc``; sessions per minute per time window; the least-squares slope of
a figure against sessions done.

Plain functions over ``/proc`` (Linux), no third-party code, so a sample costs a few milliseconds."""

from __future__ import annotations

import os

import msgspec


class ProcFigures(msgspec.Struct, kw_only=True):
    """One process at one moment."""

    rss_mb: float
    """Resident memory (``VmRSS``)."""
    fds: int
    """Open file descriptors (entries of ``/proc/PID/fd``)."""
    threads: int
    children: int
    """Live descendant processes (sandboxes, harness commands, forwarders): a count that grows is a leak too."""


def parent_map() -> dict[int, int]:
    """pid -> parent pid of every process now (one pass over ``/proc``)."""
    out: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended while we looked
        out[int(name)] = int(fields[1])
    return out


def descendants(pid: int, parents: dict[int, int]) -> int:
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    count, todo = 0, list(children.get(pid, []))
    while todo:
        p = todo.pop()
        count += 1
        todo += children.get(p, [])
    return count


def proc_figures(pid: int, parents: dict[int, int]) -> ProcFigures | None:
    """``None`` when ``pid`` is gone."""
    try:
        rss_kb = threads = 0
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss_kb = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError):
        return None
    return ProcFigures(rss_mb=rss_kb / 1024, fds=fds, threads=threads, children=descendants(pid, parents))


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ``ys`` over ``xs``; ``None`` with fewer than 3 points or no spread in ``xs``."""
    n = len(xs)
    if n < 3 or n != len(ys):
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


class Window(msgspec.Struct, kw_only=True):
    start_s: float
    end_s: float
    sessions: int
    per_min: float


def windows(times: list[float], done: list[int], window_s: float) -> list[Window]:
    """Sessions done per minute in consecutive windows of ``window_s`` seconds, from samples (time since start,
    sessions done then); the last window ends at the last sample."""
    out: list[Window] = []
    if len(times) < 2:
        return out
    start_t, start_done = times[0], done[0]
    for t, d in zip(times[1:], done[1:], strict=True):
        if t - start_t >= window_s or t == times[-1]:
            out.append(Window(start_s=round(start_t, 1), end_s=round(t, 1), sessions=d - start_done,
                              per_min=round((d - start_done) * 60 / (t - start_t), 2) if t > start_t else 0.0))
            start_t, start_done = t, d
    return out
