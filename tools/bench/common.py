"""Helpers the benchmarks in this folder share. They run as scripts (``python tools/bench/NAME.py``), so this
folder is on ``sys.path`` and they ``import common``.

Proxy benchmarks run their own roles in child processes (``python <script> _<role> args...``): :func:`spawn`
starts one, :func:`wait_up` waits for its ``/health``. :func:`cpu_s` reads a process's CPU time at nanosecond
resolution (the scheduler's run time of all its threads; clock ticks where that is not available).
:func:`realtime` runs the given processes under ``SCHED_FIFO`` for a latency measurement, all alike, so that
the other tenants of a loaded host do not decide it (each wake-up otherwise waits for a busy CPU's time slice)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime import make_runtime
from polar_hpc.runtime.handoff import ServeListener, StopServing

_sessions = itertools.count()


async def timed(fn: Callable[[], Awaitable[None]], repeats: int) -> tuple[float, float]:
    """(median, min) milliseconds of ``repeats`` awaits of ``fn``, after one warm-up await."""
    await fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples), min(samples)


def sandbox_lifecycle(spec: RuntimeSpec, root: Path, proxy_socket: Path | None = None,
                      serve_listener: ServeListener | None = None) -> Callable[[], Awaitable[None]]:
    """One session's sandbox, as a gateway runs it: a fresh runtime under ``root``, start, exec ``true``, stop."""

    async def run() -> None:
        rt = make_runtime(spec, root / f"s{next(_sessions)}", proxy_socket=proxy_socket,
                          serve_listener=serve_listener)
        await rt.start()
        res = await rt.exec(["true"])
        await rt.stop()
        assert res.ok, res.stderr

    return run


async def serve_listener_stub(listener: socket.socket) -> StopServing:
    """Where the gateway's proxy would serve a sandbox's handed-off listener; it closes every connection."""
    server = await asyncio.start_server(lambda r, w: w.close(), sock=listener)

    async def stop() -> None:
        server.close()

    return stop


async def proxy_socket_stub(path: Path) -> asyncio.Server:
    """A Unix socket where the gateway's proxy would listen (for the sandbox's socket bridge); it closes every
    connection."""
    return await asyncio.start_unix_server(lambda r, w: w.close(), path=str(path))


# ---------------------------------------------------------------------------------------------- processes
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


_LOGS: dict[int, str] = {}
"""Spawned process's pid -> the file its stderr goes to."""


def _pin_child(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})
    raise_nofile()


def spawn(script: str, role: str, *args: str, cpu: int) -> subprocess.Popen[bytes]:
    """``python script _role args...`` pinned to ``cpu``, stdout discarded, stderr to a log file (:func:`log_of`).

    Not a pipe: nobody reads a pipe while the benchmark runs, and a child whose warnings fill one (64 KiB) blocks
    in its next write and stops answering, a hang with every other process idle."""
    with tempfile.NamedTemporaryFile(prefix=f"bench-{role}-", suffix=".log", delete=False) as log:
        proc = subprocess.Popen([sys.executable, script, f"_{role}", *args], stdout=subprocess.DEVNULL, stderr=log,
                                preexec_fn=lambda: _pin_child(cpu))
    _LOGS[proc.pid] = log.name
    return proc


def log_of(proc: subprocess.Popen[bytes], nbytes: int = 2000) -> str:
    """The tail of a spawned process's stderr, and where the whole of it is."""
    path = _LOGS.get(proc.pid)
    if path is None:
        return ""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - nbytes))
        return f"{fh.read().decode(errors='replace')}\n(whole log: {path})"


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url + "/health", timeout=2).read()
            return
        except OSError as err:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not start ({err}): {log_of(proc)}") from None
            time.sleep(0.1)


def cpu_s(pid: int) -> float:
    """CPU seconds used by ``pid`` so far (user + system, all threads)."""
    try:
        return sum(int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
                   for t in os.listdir(f"/proc/{pid}/task")) / 1e9
    except (OSError, ValueError, IndexError):
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wakeups(pid: int) -> int:
    """Times ``pid`` has slept and been woken so far (voluntary context switches, all threads): on a VM each
    costs far more CPU than on bare metal, so a figure of CPU per call is read beside this one."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            for line in open(f"/proc/{pid}/task/{t}/status"):
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:
            continue  # a thread that ended
    return total


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


@contextlib.contextmanager
def pinned(pids: list[int], cpu: int | None) -> Iterator[None]:
    """Move every thread of ``pids`` to ``cpu`` inside the block (None: leave them), then back where they were."""
    before: dict[int, set[int]] = {}
    if cpu is not None:
        for pid in pids:
            for tid in map(int, os.listdir(f"/proc/{pid}/task")):
                with contextlib.suppress(OSError):
                    before[tid] = os.sched_getaffinity(tid)
                    os.sched_setaffinity(tid, {cpu})
    try:
        yield
    finally:
        for tid, cpus in before.items():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, cpus)


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


def train_grpo(bench: str, label: str, recipe: Path, work: Path, sets: list[str], cwd: Path) -> tuple[Path, float]:
    """``polar-hpc train grpo RECIPE --run-dir WORK/LABEL --set ...`` with its output in ``WORK/LABEL.log``: the run
    dir and the wall time; exits naming the log when it fails."""
    run = work / label
    cmd = [sys.executable, "-m", "polar_hpc", "train", "grpo", str(recipe), "--run-dir", str(run)]
    for s in sets:
        cmd += ["--set", s]
    print(f"[{time.strftime('%H:%M:%S')}] {label}: polar-hpc train grpo {recipe.name} " + " ".join(sets), flush=True)
    start = time.monotonic()
    with (work / f"{label}.log").open("w") as log:
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"{bench}: {label} exited {done.returncode}; see {work / (label + '.log')}")
    return run, time.monotonic() - start
