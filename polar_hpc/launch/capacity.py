"""Whether this machine can hold the sessions a local run keeps in flight: file descriptors, processes, memory.

Checked before anything is submitted (``launch/preflight.py``), for the local backend only: there the machine the
ranks run on is the one the launcher runs on (on Slurm the nodes are known only once the jobs start). A pool size
past a limit is refused naming the limit, not found as EMFILE / EAGAIN / the OOM killer mid-run.

:data:`SESSION_COST` is what one session in flight costs at the least, ours and the harness's together; it is a
floor, so a refusal means the run surely could not hold its pools (a heavier harness needs more than this):

- fds (in the gateway rank's process, which holds its sessions' pipes, pidfd, agent log and proxy connections):
  5 measured per running session of the shell harness (a gateway rank's ``/proc/<pid>/fd``: 14 idle, 19 with one
  session in RUN, on the CI Slurm cluster), plus 3 for the concurrent model calls a harness makes (codex, claude
  code stream several at once): 8.
- pids (tasks, against ``pids.max``, ``pid_max``, and ``RLIMIT_NPROC`` for a non-root user): the two bwrap
  processes of a sandbox and the harness's own process: 3 (a Node harness has ~10 threads more, each a task).
- memory: what ``tools/bench/bench_scale.py`` measured per session in flight at 250–1,000 on one rank: the two
  bwraps' PSS (~0.25 MB), the rank's growth (~0.05 MB), the light harness's shell and curl (~0.25 MB): 1 MB.

:data:`FORWARDER_COST` comes on top where each sandbox runs a Python forwarder to the proxy's Unix socket
(``network = "none"`` with ``runtime.bridge = "forwarder"``, or a backend other than bwrap): one process more and
its interpreter, ~4.4 MB PSS measured (~9 MB RSS).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import msgspec

from polar_hpc.config import RunConfig
from polar_hpc.runtime import BACKENDS, backend


class SessionCost(msgspec.Struct, frozen=True, kw_only=True):
    fds: int
    pids: int
    mem_mb: float


SESSION_COST = SessionCost(fds=8, pids=3, mem_mb=1.0)
"""The least one session in flight costs (see the module's doc for how each figure was chosen)."""
FORWARDER_COST = SessionCost(fds=0, pids=1, mem_mb=4.0)
"""What a per-sandbox forwarder adds (its fds are its own process's, not the rank's)."""
NOFILE_LIMIT = "RLIMIT_NOFILE hard limit (ulimit -Hn; a gateway rank raises its soft limit to it)"
RANK_COST = SessionCost(fds=64, pids=16, mem_mb=256.0)
"""A gateway rank's own cost besides its sessions (14 fds idle, ~8 threads, ~190 MB RSS measured; rounded up)."""


class MachineLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What this machine lets a run have; ``None``: no limit found. Each with the name of the limit it comes from."""

    fds: int | None = None
    fds_from: str = ""
    pids: int | None = None
    pids_from: str = ""
    mem_mb: float | None = None
    mem_from: str = ""


def sessions_per_rank(cfg: RunConfig) -> int:
    """Sessions a gateway rank can hold a sandbox for at once: INIT, READY, RUN and POSTRUN slots."""
    g = cfg.gateway
    return g.init_pool + g.ready_buffer + g.run_pool + g.postrun_pool


def session_cost(cfg: RunConfig) -> SessionCost:
    """The least a session of this run costs: :data:`SESSION_COST`, plus :data:`FORWARDER_COST` where each sandbox
    runs a forwarder (``network = "none"`` without the bwrap hand-off)."""
    rt = cfg.runtime
    if rt.network != "none" or rt.backend not in BACKENDS or not backend(rt.backend).forwarder(rt):
        return SESSION_COST
    return SessionCost(fds=SESSION_COST.fds + FORWARDER_COST.fds, pids=SESSION_COST.pids + FORWARDER_COST.pids,
                       mem_mb=SESSION_COST.mem_mb + FORWARDER_COST.mem_mb)


def pool_problems(cfg: RunConfig, limits: MachineLimits, cost: SessionCost | None = None) -> list[str]:
    """One line per limit the run's pools exceed (all ranks on this machine), naming the limit and the fix
    (``cost``: per session, by default :func:`session_cost`)."""
    cost = cost or session_cost(cfg)
    per_rank = sessions_per_rank(cfg)
    ranks = cfg.gateway.num_ranks
    g = cfg.gateway
    pools = (f"gateway pools hold {per_rank} sessions per rank (init_pool {g.init_pool} + ready_buffer "
             f"{g.ready_buffer} + run_pool {g.run_pool} + postrun_pool {g.postrun_pool})")
    out: list[str] = []
    fds = RANK_COST.fds + per_rank * cost.fds  # per process: each rank has its own descriptor table
    if limits.fds is not None and fds > limits.fds:
        out.append(f"{pools}: a rank needs at least {fds} file descriptors ({cost.fds} a session), more than "
                   f"{limits.fds_from} = {limits.fds} here; lower the pools or raise the limit (ulimit -Hn)")
    pids = ranks * (RANK_COST.pids + per_rank * cost.pids)
    if limits.pids is not None and pids > limits.pids:
        out.append(f"{pools} × {ranks} rank(s): at least {pids} processes ({cost.pids} a session), more than "
                   f"{limits.pids_from} = {limits.pids} here; lower the pools or gateway.num_ranks")
    mem = ranks * (RANK_COST.mem_mb + per_rank * cost.mem_mb)
    if limits.mem_mb is not None and mem > limits.mem_mb:
        out.append(f"{pools} × {ranks} rank(s): at least {mem:.0f} MB of memory ({cost.mem_mb:.0f} MB a session, "
                   f"before the harness's own), more than {limits.mem_from} = {limits.mem_mb:.0f} MB here; lower "
                   "the pools or gateway.num_ranks")
    return out


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_dir() -> Path | None:
    """This process's cgroup v2 directory (``0::/path`` in /proc/self/cgroup)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return Path("/sys/fs/cgroup") / line[3:].lstrip("/")
    return None


def _least(found: list[tuple[int | float | None, str]]) -> tuple[int | float | None, str]:
    known = [(v, name) for v, name in found if v is not None and v > 0]
    return min(known, key=lambda x: x[0]) if known else (None, "")


def machine_limits() -> MachineLimits:
    """This machine's limits as a process started from here (a local job) gets them."""
    _, hard_fds = resource.getrlimit(resource.RLIMIT_NOFILE)  # a rank raises its soft limit to it (util/limits)
    fds = None if hard_fds == resource.RLIM_INFINITY else hard_fds
    cgroup = _cgroup_dir()
    pids_found: list[tuple[int | float | None, str]] = [
        (_read_int(Path("/proc/sys/kernel/pid_max")), "/proc/sys/kernel/pid_max"),
        (_read_int(Path("/proc/sys/kernel/threads-max")), "/proc/sys/kernel/threads-max"),
    ]
    if cgroup is not None:
        pids_found.append((_read_int(cgroup / "pids.max"), f"{cgroup}/pids.max"))
    if os.geteuid() != 0:  # root is exempt from RLIMIT_NPROC
        soft_nproc, _ = resource.getrlimit(resource.RLIMIT_NPROC)
        if soft_nproc != resource.RLIM_INFINITY:
            pids_found.append((soft_nproc, "RLIMIT_NPROC (ulimit -u)"))
    mem_found: list[tuple[int | float | None, str]] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_found.append((int(line.split()[1]) / 1024, "MemTotal (/proc/meminfo)"))
    except OSError:
        pass
    if cgroup is not None and (limit := _read_int(cgroup / "memory.max")) is not None:
        mem_found.append((limit / 2**20, f"{cgroup}/memory.max"))
    pids, pids_from = _least(pids_found)
    mem, mem_from = _least(mem_found)
    return MachineLimits(fds=fds, fds_from=NOFILE_LIMIT if fds is not None else "",
                         pids=None if pids is None else int(pids), pids_from=pids_from,
                         mem_mb=None if mem is None else float(mem), mem_from=mem_from)
