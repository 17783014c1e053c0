"""Watch, cancel and resume a run: job states (sacct or pids), the coordinator's status.json, endpoints."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from polar_hpc.launch.budget import RESUBMITS, cancel_grace_s
from polar_hpc.launch.lost import SUBMIT_LAG_S, JobView, coming_back
from polar_hpc.log import get_logger
from polar_hpc.util import proc
from polar_hpc.util.slurm import UNKNOWN, JobInfo, job_infos
from polar_hpc.wire.control import RunStatus
from polar_hpc.wire.endpoints import endpoint_path
from polar_hpc.wire.rundir import JOBS, CancelRecord, Component, JobRecord, JobsFile, RunDir, component_name

log = get_logger("launch")

class ComponentState(msgspec.Struct, kw_only=True):
    component: Component
    index: int
    job_id: str
    backend: str
    state: str
    alive: bool
    pid: int | None = None
    endpoint: bool = False
    log_dir: str = ""
    reason: str = ""
    """Slurm: why a pending job waits (``Resources``, ``JobHeldUser``, ...)."""
    node: str = ""
    elapsed: str = ""
    time_limit: str = ""
    submitted_at: float = 0.0
    resubmits: int = 0
    """How often the run's monitor submitted this component again after its job was lost."""
    lost_job: str = ""
    lost_state: str = ""

    def resubmitted_line(self) -> str:
        """``gateway-0 resubmitted 1/3 after CANCELLED (job 123)``; empty when never resubmitted."""
        if not self.resubmits:
            return ""
        budget = RESUBMITS.get(self.component, 0)
        return (f"{component_name(self.component, self.index)} resubmitted {self.resubmits}/{budget} after "
                f"{self.lost_state} (job {self.lost_job})")


def _component_pid(run: RunDir, job: JobRecord) -> int | None:
    """The component's pid from its pid file, only while that pid is still the process the job started."""
    record = proc.read_pid_file(run.pid_file(job.component, job.index))
    if record is None:
        return None
    pid, started = record
    if started is not None:
        return pid if proc.same_process(pid, started) else None
    # an old one-field pid file: the component's command line names the run dir
    return pid if proc.alive(pid) and str(run.root) in proc.cmdline(pid) else None


def _controller_pid(run: RunDir, job: JobRecord) -> int | None:
    """Local backend: the job's controller (submitit's job id is its pid), only while the pid is still it."""
    if job.backend != "local" or not job.job_id.isdigit():
        return None
    pid = int(job.job_id)
    if job.pid_start is not None:
        return pid if proc.same_process(pid, job.pid_start) else None
    return pid if proc.alive(pid) and any(str(run.root) in a for a in proc.cmdline(pid)) else None


def sacct_states(job_ids: list[str], timeout_s: float = 10.0) -> dict[str, str]:
    """Job id -> Slurm state (first word), pending array rows expanded; empty when Slurm does not answer."""
    infos = job_infos(job_ids, timeout_s=timeout_s)
    return {} if infos is None else {j: i.state for j, i in infos.items()}


def component_states(run: RunDir, jobs: JobsFile) -> list[ComponentState]:
    infos = job_infos([j.job_id for j in jobs.jobs]) if jobs.backend == "slurm" else {}
    out = []
    now = time.time()
    for job in sorted(jobs.jobs, key=lambda j: (j.component, j.index)):
        pid = _component_pid(run, job)
        info = None
        if jobs.backend == "slurm":
            info = (infos or {}).get(job.job_id, JobInfo(job_id=job.job_id, state=UNKNOWN))
            state = info.state
            # not listed: just submitted (sacct lags sbatch), or Slurm does not answer at all (infos is None)
            alive = info.live or (state == UNKNOWN and (infos is None or now - job.submitted_at < SUBMIT_LAG_S))
        else:
            alive = _controller_pid(run, job) is not None or pid is not None
            state = "RUNNING" if alive else "ENDED"
        out.append(ComponentState(
            component=job.component, index=job.index, job_id=job.job_id, backend=jobs.backend, state=state,
            alive=alive, pid=pid, endpoint=endpoint_path(run.root, job.name).is_file(),
            log_dir=job.folder, reason=info.reason if info else "", node=info.node if info else "",
            elapsed=info.elapsed if info else "", time_limit=info.time_limit if info else "",
            submitted_at=job.submitted_at, resubmits=job.resubmits, lost_job=job.lost_job,
            lost_state=job.lost_state,
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
            for i, line in enumerate(lines):
                if " ERROR " in line or " CRITICAL " in line or (
                        line.startswith("Traceback") and i + 1 < len(lines)):
                    text = line if not line.startswith("Traceback") else next(
                        (x for x in lines[i + 1:] if x and not x.startswith(" ")), line)
                    found.append((mtime + i * 1e-6, f"{job.name}: {text.strip()[:200]}"))
    return [text for _, text in sorted(found)[-limit:]]


def session_counts(status: RunStatus) -> tuple[int, int, int]:
    """(done, committed, total): done = evaluated (committed or still in a rank's open shard) or final (given up,
    cancelled): every session neither pending nor running."""
    s = {k.lower(): v for k, v in status.sessions.items()}
    total = sum(s.values())
    return total - s.get("pending", 0) - s.get("running", 0), s.get("committed", 0), total


def progress_line(status: RunStatus | None) -> str:
    if status is None:
        return "waiting for the coordinator's first status..."
    done, committed, total = session_counts(status)
    eta = f"{status.eta_s:.0f}s" if status.eta_s is not None else "?"
    return (f"sessions {done}/{total} done ({committed} committed)  accepted {status.accepted}  "
            f"failed {status.failed}  reward {status.reward_mean:.3f}  {status.throughput_per_min:.1f}/min  "
            f"ETA {eta}  ranks alive {status.ranks_alive}")


DEAD_CONFIRM_S = 10.0
"""A component must look ended this long (over several polls) before ``wait_run`` gives up on the run: a requeued
job passes through states that a single sacct row may catch mid-way."""


def _back(c: ComponentState, requeue: bool) -> bool:
    """Alive, or lost with budget left while the coordinator's job (the run's monitor) runs: coming back."""
    if c.alive:
        return True
    if c.backend != "slurm":
        return False
    return coming_back(JobView(component=c.component, index=c.index, job_id=c.job_id, state=c.state,
                               submitted_at=c.submitted_at, resubmits=c.resubmits), requeue=requeue)


def _gone(states: list[ComponentState], requeue: bool = True) -> str | None:
    """Why the run cannot finish any more: its coordinator ended, or every gateway rank did, or every inference
    server's job (a requeued one is alive: pending; a lost one the monitor resubmits is coming back); ``None`` if
    none."""
    coord = [c for c in states if c.component == "coordinator"]
    if coord and not coord[0].alive:
        return f"coordinator ended ({coord[0].state}) before the run finished; logs: {coord[0].log_dir}"
    servers = [c for c in states if c.component == "inference"]
    if servers and not any(_back(c, requeue) for c in servers):
        ended = ", ".join(f"inference-{c.index} {c.state}" for c in servers)
        return (f"every inference server ended ({ended}) before the run finished; logs: {run_logs(servers[0])} "
                "(polar-hpc resume submits them again)")
    ranks = [c for c in states if c.component == "gateway"]
    if ranks and not any(_back(c, requeue) for c in ranks):
        ended = ", ".join(f"gateway-{c.index} {c.state}" for c in ranks)
        return f"every gateway rank ended ({ended}) before the run finished; logs: {run_logs(ranks[0])}"
    return None


def run_logs(c: ComponentState) -> str:
    return str(Path(c.log_dir).parent)


def wait_run(
    run: RunDir,
    timeout_s: float | None = None,
    interval_s: float = 2.0,
    report: Callable[[str], None] | None = None,
    confirm_s: float = DEAD_CONFIRM_S,
    on_status: Callable[[RunStatus | None], None] | None = None,
) -> int:
    """Follow the run until the coordinator reports it finished. 0: finished; 1: the run cannot finish (the
    coordinator or every gateway rank ended, or it was cancelled); 124: timeout.

    ``report`` gets each new progress line and the reason for stopping (the CLI prints them); with ``on_status``
    (a live display) that gets every status instead of the progress lines."""
    say = report or (lambda _line: None)
    jobs = run.read_jobs()
    requeue = run.load_config().launch.requeue if jobs is not None and jobs.backend == "slurm" else True
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last = ""
    gone_since: float | None = None
    while True:
        status = run.read_status()
        line = progress_line(status)
        if on_status is not None:
            on_status(status)
        elif line != last:
            say(line)
            last = line
        if status is not None and status.finished:
            return 0
        cancelled = run.cancelled()
        if cancelled is not None:
            say(f"the run was {stopped_line(cancelled)} (polar-hpc resume {run.root} to go on)")
            return 1
        if jobs is not None:
            jobs = run.read_jobs() or jobs  # the monitor rewrites it when it resubmits a lost job
            why = _gone(component_states(run, jobs), requeue)
            if why is None:
                gone_since = None
            elif gone_since is None:
                gone_since = time.monotonic()
            elif time.monotonic() - gone_since >= confirm_s:
                status = run.read_status()
                if status is not None and status.finished:
                    return 0
                say(why)
                return 1
        if deadline is not None and time.monotonic() > deadline:
            say(f"gave up waiting after {timeout_s:.0f}s; the run goes on (polar-hpc status {run.root})")
            return 124
        time.sleep(interval_s)


SLURM_STOP_SIGNAL = signal.SIGUSR1
"""What ``cancel`` sends a running Slurm job to stop its component. Slurm signals every process of the job's step,
the harnesses and sandboxes of a gateway included: a SIGTERM would end their sessions as the harness's own
failures. The job body (``launch/jobs.py``) SIGTERMs its component on it; the component's tree ignores it."""
STOP_ORDER: tuple[tuple[Component, ...], ...] = (("gateway",), ("coordinator", "inference"))
"""Who ``cancel`` stops first: the gateways drain (their sessions finish or are released, their shards commit)
while the coordinator and the inference servers still serve them; then the rest."""
LATE_STOP_S = 30.0
"""How long the coordinator and inference servers get after SIGTERM (they hold no session) before SIGKILL."""


def cancel_run(run: RunDir, grace_s: float | None = None, *, reason: str = "",
               spare: tuple[Component, int] | None = None) -> bool:
    """Drain then stop every component, gateways first (:data:`STOP_ORDER`); whatever remains is killed.

    Returns False, changing nothing, when the run already finished. ``cancelled.json`` is written first, with
    ``reason`` when the run is stopped by a fault rather than by ``polar-hpc cancel`` (components stopped so end
    without a failure; ``status`` and ``--wait`` say "cancelled" or "stopped" and why). Slurm jobs still pending
    are cancelled at once (nothing of them to drain). ``grace_s`` bounds the gateways' drain and defaults to the
    run's :func:`polar_hpc.launch.budget.cancel_grace_s`. ``spare``: the component that stops the run, left alone.
    Local backend: only pids still verified as this run's processes are signalled."""
    jobs = run.read_jobs()
    if jobs is None:
        raise FileNotFoundError(f"{run.root}: no {JOBS}; nothing was launched here")
    status = run.read_status()
    if status is not None and status.finished:
        return False
    if grace_s is None:
        grace_s = cancel_grace_s(run.load_config())
    run.mark_cancelled(grace_s, reason=reason)
    if spare is not None:
        jobs = JobsFile(backend=jobs.backend, jobs=[j for j in jobs.jobs if (j.component, j.index) != spare])
    if jobs.backend == "slurm":
        waiting = [c.job_id for c in component_states(run, jobs) if c.alive and c.state != "RUNNING"]
        if waiting:
            subprocess.run(["scancel", *waiting], check=False, timeout=30)
    for stage, wait_s in zip(STOP_ORDER, (grace_s, LATE_STOP_S), strict=True):
        _stop_components(run, jobs, set(stage), wait_s)
    return True


def stopped_line(record: CancelRecord) -> str:
    """``cancelled at <time>`` or ``stopped at <time>: <why>`` (a fault stopped the run)."""
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.at))
    return f"stopped at {at}: {record.reason}" if record.reason else f"cancelled at {at}"


def _stop_components(run: RunDir, jobs: JobsFile, which: set[str], wait_s: float) -> None:
    """SIGTERM the live components named in ``which``, wait until they end (at most ``wait_s``), kill the rest."""
    mine = JobsFile(backend=jobs.backend, jobs=[j for j in jobs.jobs if j.component in which])
    if not mine.jobs:
        return
    if jobs.backend == "slurm":
        running = [c.job_id for c in component_states(run, mine) if c.alive]
        if running:
            subprocess.run(["scancel", f"--signal={SLURM_STOP_SIGNAL.name.removeprefix('SIG')}", *running],
                           check=False, timeout=30)
    else:
        for job in mine.jobs:
            pid = _component_pid(run, job)
            if pid is not None:
                proc.signal_all([pid], signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and any(c.alive for c in component_states(run, mine)):
        time.sleep(0.2)
    left = [c for c in component_states(run, mine) if c.alive]
    if not left:
        return
    log.warning("cancel: %s still running after %.0fs; killing", ", ".join(f"{c.component}-{c.index}" for c in left),
                wait_s)
    if jobs.backend == "slurm":
        subprocess.run(["scancel", *[c.job_id for c in left]], check=False, timeout=30)
        return
    for job in mine.jobs:
        for pid in (_controller_pid(run, job), _component_pid(run, job)):
            if pid is not None:
                proc.signal_tree(pid, signal.SIGKILL)


def dead_components(run: RunDir) -> set[tuple[Component, int]]:
    jobs = run.read_jobs()
    if jobs is None:
        return set()
    return {(c.component, c.index) for c in component_states(run, jobs) if not c.alive}
