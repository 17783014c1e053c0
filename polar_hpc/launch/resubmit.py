"""The run's monitor of lost jobs: polls Slurm for the ledger's jobs, asks :class:`polar_hpc.launch.lost.LostJobs`
what to do, and does it (submits the lost job again, or says why the run must stop).

It runs in the coordinator's job body (``launch/jobs.py``), which lives as long as the run; the resubmitted
gateway rank registers under its old rank and the coordinator re-dispatches what the lost one held (at once on
its registration, or when its heartbeats time out). Slurm backend only: a local job lost is a process killed on
this machine, and ``polar-hpc resume`` brings it back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from polar_hpc.launch.lost import Action, JobView, LostJobs
from polar_hpc.log import get_logger
from polar_hpc.util.slurm import UNKNOWN, job_infos
from polar_hpc.wire.rundir import Component, RunDir

log = get_logger("launch")

WATCH_EVERY_S = 5.0
"""How often the monitor asks Slurm for the run's jobs."""

Submit = Callable[..., Any]
"""``launch.submit.submit_run`` (passed in: the submitter pickles the job body that holds this monitor)."""


class Resubmitter:
    """Called by the coordinator's job body every second or so; returns the reason to stop the run, or ``None``."""

    def __init__(self, run_dir: str, submit: Submit, every_s: float = WATCH_EVERY_S) -> None:
        self.run_dir = run_dir
        self.submit = submit
        self.every_s = every_s
        self._last = float("-inf")
        self._lost: LostJobs | None = None

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_last": float("-inf"), "_lost": None}

    def __call__(self, now: float | None = None) -> str | None:
        clock = time.monotonic()
        if clock - self._last < self.every_s:
            return None
        self._last = clock
        run = RunDir(self.run_dir)
        jobs = run.read_jobs()
        if jobs is None or jobs.backend != "slurm":
            return None
        if self._lost is None:
            self._lost = LostJobs(requeue=run.load_config().launch.requeue)
        status = run.read_status()
        over = run.cancelled() is not None or (status is not None and status.finished)
        infos = {} if over else job_infos([j.job_id for j in jobs.jobs])
        if infos is None:  # Slurm does not answer: nothing can be decided
            return None
        views = [JobView(component=j.component, index=j.index, job_id=j.job_id,
                         state=info.state if (info := infos.get(j.job_id)) is not None else UNKNOWN,
                         submitted_at=j.submitted_at, resubmits=j.resubmits) for j in jobs.jobs]
        actions = self._lost.step(views, time.time() if now is None else now, run_over=over)
        stops = [a for a in actions if a.kind == "stop"]
        if stops:
            return "; ".join(a.reason for a in stops)
        again = [a for a in actions if a.kind == "resubmit"]
        if again:
            self._resubmit(run, again)
        return None

    def _resubmit(self, run: RunDir, actions: list[Action]) -> None:
        for a in actions:
            log.warning("%s", a.reason)
        lost: dict[tuple[Component, int], str] = {(a.component, a.index): a.state for a in actions}
        self.submit(run.load_config(), run, only=set(lost), lost=lost)
