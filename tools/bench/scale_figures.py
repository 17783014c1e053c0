"""What ``bench_scale.py`` computes, apart from driving the runs: think times, the processes of a rank split into
ours (the rank with its proxy, bwrap, in-sandbox forwarders) and the harness's own, percentiles, the harness's
call lines and the proxy's added latency from completion records.

Plain functions (``/proc`` reads aside, no third-party code), unit-tested in ``tests/unit/bench``."""

from __future__ import annotations

import math
import os
import random

import msgspec

FORWARDER_MARK = "uds_forward.py"
"""In a process's command line: an in-sandbox forwarder (ours), whether it still forwards or only handed off."""
CALL_LINE = "call "
"""The light harness prints ``call <seconds>`` per model call (curl's ``time_total``)."""


def think_times(rng: random.Random, calls: int, hold_s: float, sigma: float = 1.0, jitter: float = 0.2) -> list[float]:
    """A session's pauses before each of its ``calls`` model calls: log-normal (a long tail: most pauses short,
    a few long), scaled so that they add up to ``hold_s`` × U(1 − jitter, 1 + jitter): every session holds its
    sandbox about ``hold_s`` seconds, so that a level's sessions are all in flight at once after the ramp."""
    if calls < 1 or hold_s <= 0:
        raise ValueError(f"think_times: calls {calls} and hold_s {hold_s} must be positive")
    raw = [rng.lognormvariate(0.0, sigma) for _ in range(calls)]
    total = hold_s * rng.uniform(1 - jitter, 1 + jitter)
    scale = total / sum(raw)
    return [round(x * scale, 3) for x in raw]


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in [0, 100]); None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))
    return s[k]


def call_times(log_tail: str) -> list[float]:
    """Seconds of each model call the light harness printed (``call 0.004213``); other lines are skipped."""
    out = []
    for line in log_tail.splitlines():
        if line.startswith(CALL_LINE):
            try:
                out.append(float(line[len(CALL_LINE):].strip()))
            except ValueError:
                continue
    return out


class _Timings(msgspec.Struct):
    received: float = 0.0
    engine_start: float = 0.0
    engine_end: float = 0.0
    responded: float = 0.0


class _Record(msgspec.Struct):
    timings: _Timings = msgspec.field(default_factory=_Timings)


_RECORD = msgspec.json.Decoder(_Record)


def record_latencies_s(jsonl: bytes) -> list[tuple[float, float, float]]:
    """Per completion record of a session's JSONL: (when it was received, wall time; the proxy's own time:
    received → responded less the engine's call; the engine's call). Records without timings are skipped."""
    out = []
    for line in jsonl.splitlines():
        if not line.strip():
            continue
        t = _RECORD.decode(line).timings
        if t.received and t.responded:
            engine = max(0.0, t.engine_end - t.engine_start)
            out.append((t.received, max(0.0, (t.responded - t.received) - engine), engine))
    return out


# ---------------------------------------------------------------------------------------------- processes
class ProcCost(msgspec.Struct, kw_only=True):
    """What a set of processes holds now: count, RSS and PSS (shared pages split among their users: the figure
    that adds up across a thousand bwraps sharing one libc), open fds, CPU seconds so far."""

    count: int = 0
    rss_mb: float = 0.0
    pss_mb: float = 0.0
    fds: int = 0
    cpu_s: float = 0.0

    def add(self, other: ProcCost) -> None:
        self.count += other.count
        self.rss_mb += other.rss_mb
        self.pss_mb += other.pss_mb
        self.fds += other.fds
        self.cpu_s += other.cpu_s


def classify(comm: str, cmdline: str) -> str:
    """``bwrap``, ``forwarder`` (ours) or ``harness`` for a process below a gateway rank."""
    if comm == "bwrap":
        return "bwrap"
    if FORWARDER_MARK in cmdline:
        return "forwarder"
    return "harness"


def _read(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read().decode(errors="replace")


def proc_cost(pid: int, *, memory: bool = True) -> ProcCost | None:
    """One process's cost now; None when it is gone. ``memory=False`` skips ``smaps_rollup`` (the costly read)."""
    try:
        stat = _read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
        cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
        rss = pss = 0.0
        if memory:
            for line in _read(f"/proc/{pid}/smaps_rollup").splitlines():
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError, IndexError):
        return None
    return ProcCost(count=1, rss_mb=rss, pss_mb=pss, fds=fds, cpu_s=cpu)


def descendants_of(pid: int, parents: dict[int, int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def sandbox_processes(rank_pid: int, parents: dict[int, int]) -> dict[int, str]:
    """pid -> kind (:func:`classify`) of every process below the rank."""
    out: dict[int, str] = {}
    for pid in descendants_of(rank_pid, parents):
        try:
            comm = _read(f"/proc/{pid}/comm").strip()
            cmd = _read(f"/proc/{pid}/cmdline").replace("\0", " ")
        except OSError:
            continue
        out[pid] = classify(comm, cmd)
    return out
