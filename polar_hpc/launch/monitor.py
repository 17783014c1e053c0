"""Watch, cancel and resume a run: job states (sacct or pids), the coordinator's status.json, endpoints."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from polar_hpc.launch.rundir import JobRecord, JobsFile, RunDir
from polar_hpc.log import get_logger
from polar_hpc.wire.control import RunStatus

log = get_logger("launch")

LIVE_SLURM_STATES = {"PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "RESIZING", "SUSPENDED",
                     "REQUEUE_HOLD", "REQUEUE_FED"}


class ComponentState(msgspec.Struct, kw_only=True):
    component: str
    index: int
    job_id: str
    backend: str
    state: str
    alive: bool
    pid: int | None = None
    endpoint: bool = False
    log_dir: str = ""


def read_status(run: RunDir) -> RunStatus | None:
    try:
        return msgspec.json.decode(run.status_path.read_bytes(), type=RunStatus)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _component_pid(run: RunDir, job: JobRecord) -> int | None:
    try:
        return int((run.logs(job.component) / f"{job.component}-{job.index}.pid").read_text())
    except (OSError, ValueError):
        return None


def sacct_states(job_ids: list[str], timeout_s: float = 10.0) -> dict[str, str]:
    if not job_ids:
        return {}
    try:
        out = subprocess.run(
            ["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(sorted({j.split("_")[0] for j in job_ids}))],
            capture_output=True, text=True, timeout=timeout_s, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as err:
        log.warning("sacct failed (%s); job states unknown", err)
        return {}
    states: dict[str, str] = {}
    for line in out.splitlines():
        jid, _, state = line.partition("|")
        states[jid] = state.split()[0] if state else "UNKNOWN"
    return states


def component_states(run: RunDir, jobs: JobsFile) -> list[ComponentState]:
    slurm = sacct_states([j.job_id for j in jobs.jobs]) if jobs.backend == "slurm" else {}
    out = []
    for job in sorted(jobs.jobs, key=lambda j: (j.component, j.index)):
        pid = _component_pid(run, job)
        if jobs.backend == "slurm":
            state = slurm.get(job.job_id, "UNKNOWN")
            alive = state in LIVE_SLURM_STATES or state == "UNKNOWN"  # sacct lags sbatch by a moment
        else:
            alive = pid_alive(int(job.job_id)) or (pid is not None and pid_alive(pid))
            state = "RUNNING" if alive else "ENDED"
        name = "coordinator" if job.component == "coordinator" else f"{job.component}-{job.index}"
        out.append(ComponentState(
            component=job.component, index=job.index, job_id=job.job_id, backend=jobs.backend, state=state,
            alive=alive, pid=pid, endpoint=(run.endpoints / f"{name}.json").is_file(),
            log_dir=job.folder,
        ))
    return out


def recent_errors(jobs: JobsFile, limit: int = 5, tail_bytes: int = 65536) -> list[str]:
    """The last ERROR / CRITICAL lines (and tracebacks' last lines) of every component's log."""
    found: list[tuple[float, str]] = []
    for job in jobs.jobs:
        for log_file in Path(job.folder).glob("*.out"):
            try:
                with log_file.open("rb") as fh:
                    fh.seek(max(0, log_file.stat().st_size - tail_bytes))
                    lines = fh.read().decode(errors="replace").splitlines()
                mtime = log_file.stat().st_mtime
            except OSError:
                continue
            name = "coordinator" if job.component == "coordinator" else f"{job.component}-{job.index}"
            for i, line in enumerate(lines):
                if " ERROR " in line or " CRITICAL " in line or (
                        line.startswith("Traceback") and i + 1 < len(lines)):
                    text = line if not line.startswith("Traceback") else next(
                        (x for x in lines[i + 1:] if x and not x.startswith(" ")), line)
                    found.append((mtime + i * 1e-6, f"{name}: {text.strip()[:200]}"))
    return [text for _, text in sorted(found)[-limit:]]


def progress_line(status: RunStatus | None) -> str:
    if status is None:
        return "waiting for the coordinator's first status..."
    s = {k.lower(): v for k, v in status.sessions.items()}
    done = s.get("committed", 0)
    total = sum(s.values())
    failed = s.get("error", 0)
    eta = f"{status.eta_s:.0f}s" if status.eta_s is not None else "?"
    return (f"sessions {done}/{total}  accepted {status.accepted}  failed {failed}  "
            f"reward {status.reward_mean:.3f}  {status.throughput_per_min:.1f}/min  ETA {eta}  "
            f"ranks alive {status.ranks_alive}")


def wait_run(run: RunDir, timeout_s: float | None = None, interval_s: float = 2.0) -> int:
    """Follow the run until the coordinator reports it finished. 0: finished; 1: components died; 124: timeout."""
    jobs = run.read_jobs()
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last = ""
    while True:
        status = read_status(run)
        line = progress_line(status)
        if line != last:
            sys.stderr.write(line + "\n")
            last = line
        if status is not None and status.finished:
            return 0
        if jobs is not None:
            states = component_states(run, jobs)
            coord = [c for c in states if c.component == "coordinator"]
            if coord and not coord[0].alive:
                status = read_status(run)
                if status is not None and status.finished:
                    return 0
                sys.stderr.write(f"coordinator ended ({coord[0].state}) before the run finished; logs: {coord[0].log_dir}\n")
                return 1
        if deadline is not None and time.monotonic() > deadline:
            sys.stderr.write(f"gave up waiting after {timeout_s:.0f}s; the run goes on (polar-hpc status {run.root})\n")
            return 124
        time.sleep(interval_s)


def _signal_tree(pid: int, sig: signal.Signals) -> None:
    """Signal a process and all its descendants (by walking /proc), children first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    order: list[int] = []
    stack = [pid]
    while stack:
        p = stack.pop()
        order.append(p)
        stack.extend(children.get(p, []))
    for p in reversed(order):
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def cancel_run(run: RunDir, grace_s: float = 60.0) -> None:
    """Drain then stop every component: SIGTERM lets gateways commit their shards; whatever remains is killed."""
    jobs = run.read_jobs()
    if jobs is None:
        raise FileNotFoundError(f"{run.root}: no jobs.json; nothing was launched here")
    states = [c for c in component_states(run, jobs) if c.alive]
    if jobs.backend == "slurm":
        ids = [c.job_id for c in states]
        if ids:
            subprocess.run(["scancel", "--signal=TERM", *ids], check=False, timeout=30)
    else:
        for c in states:
            if c.pid is not None and pid_alive(c.pid):
                os.kill(c.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(c.alive for c in component_states(run, jobs)):
        time.sleep(0.5)
    left = [c for c in component_states(run, jobs) if c.alive]
    if jobs.backend == "slurm":
        if left:
            subprocess.run(["scancel", *[c.job_id for c in left]], check=False, timeout=30)
    else:
        for c in left:
            _signal_tree(int(c.job_id), signal.SIGKILL)
            if c.pid is not None:
                _signal_tree(c.pid, signal.SIGKILL)


def dead_components(run: RunDir) -> set[tuple[str, int]]:
    jobs = run.read_jobs()
    if jobs is None:
        return set()
    return {(c.component, c.index) for c in component_states(run, jobs) if not c.alive}
