"""What the proxy benchmarks share: server processes pinned to a CPU, their CPU time and memory, ports.

A benchmark script runs its own roles in child processes (``python <script> _<role> args...``): :func:`spawn`
starts one, :func:`wait_up` waits for its ``/health``. :func:`cpu_s` reads a process's CPU time at nanosecond
resolution (the scheduler's run time of all its threads; clock ticks where that is not available).
:func:`realtime` runs the given processes under ``SCHED_FIFO`` for a latency measurement, all alike, so that
the other tenants of a loaded host do not decide it (each wake-up otherwise waits for a busy CPU's time slice).
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def spawn(script: str, role: str, *args: str, cpu: int) -> subprocess.Popen[bytes]:
    """``python script _role args...`` pinned to ``cpu``, stdout discarded, stderr kept for :func:`wait_up`."""
    return subprocess.Popen([sys.executable, script, f"_{role}", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=lambda: (os.sched_setaffinity(0, {cpu}), raise_nofile()))


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url + "/health", timeout=2).read()
            return
        except OSError as err:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
                raise RuntimeError(f"{url} did not start ({err}): {tail}") from None
            time.sleep(0.1)


def cpu_s(pid: int) -> float:
    """CPU seconds used by ``pid`` so far (user + system, all threads)."""
    try:
        return sum(int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
                   for t in os.listdir(f"/proc/{pid}/task")) / 1e9
    except (OSError, ValueError, IndexError):
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


@contextlib.contextmanager
def realtime(pids: list[int], enabled: bool = True) -> Iterator[bool]:
    """Run ``pids`` (and this process) under ``SCHED_FIFO`` inside the block; yields whether that was allowed."""
    pids = [0, *pids]
    done: list[int] = []
    if enabled:
        for pid in pids:
            try:
                os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(10))
            except OSError:
                break
            done.append(pid)
    try:
        yield enabled and len(done) == len(pids)
    finally:
        for pid in done:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
