"""Which ended job the run's monitor resubmits, and when it gives up: a pure state machine, the clock passed in.

A gateway or inference job that leaves Slurm without a requeue (cancelled by hand, its node lost, a boot failure,
a crash, or gone from squeue and sacct alike) is *lost*: the monitor (the coordinator's job body,
``launch/resubmit.py``) submits it again, up to its component's budget (:data:`polar_hpc.launch.budget.RESUBMITS`);
one more loss and the run stops with the reason, as an inference server's restarts used up do. A job must look
lost for :data:`CONFIRM_S` (over several polls) first: a requeued job passes through states a single row may catch
mid-way. Jobs that end on purpose (COMPLETED: the run finished or was cancelled; DEADLINE; REVOKED) are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

from polar_hpc.launch.budget import RESUBMITS
from polar_hpc.util.slurm import LIVE_STATES, UNKNOWN
from polar_hpc.wire.rundir import Component, component_name

LOST_STATES = frozenset({"CANCELLED", "NODE_FAIL", "BOOT_FAIL", "FAILED", "OUT_OF_MEMORY", UNKNOWN})
"""Ended without coming back: resubmitted. UNKNOWN: neither squeue nor sacct lists the job (past SUBMIT_LAG_S)."""
REQUEUE_STATES = frozenset({"PREEMPTED", "TIMEOUT"})
"""Preempted or out of walltime and not requeued (PreemptMode=CANCEL, submitit's timeouts used up): resubmitted only
with ``launch.requeue`` (false: the recipe asked such a job to end)."""
CONFIRM_S = 10.0
"""How long a job must look lost before it is resubmitted."""
SUBMIT_LAG_S = 60.0
"""A job Slurm does not list yet (sacct lags sbatch) is not lost for this long after its submission."""

Verdict = Literal["live", "lost", "ended"]


def verdict(state: str, *, requeue: bool) -> Verdict:
    """``live``: queued, running or coming back; ``lost``: to be resubmitted; ``ended``: on purpose, left alone."""
    if state in LIVE_STATES:
        return "live"
    if state in LOST_STATES or (requeue and state in REQUEUE_STATES):
        return "lost"
    return "ended"


class JobView(msgspec.Struct, frozen=True, kw_only=True):
    """One job of the ledger as the monitor sees it at a poll."""

    component: Component
    index: int
    job_id: str
    state: str
    """Slurm's state (first word), UNKNOWN when it lists the job nowhere."""
    submitted_at: float
    resubmits: int = 0
    """How often this component was resubmitted already (``JobRecord.resubmits``)."""

    @property
    def name(self) -> str:
        return component_name(self.component, self.index)


class Action(msgspec.Struct, frozen=True, kw_only=True):
    kind: Literal["resubmit", "stop"]
    component: Component
    index: int
    job_id: str
    state: str
    used: int
    """Resubmissions of this component before this one."""
    budget: int

    @property
    def reason(self) -> str:
        name = component_name(self.component, self.index)
        if self.kind == "resubmit":
            return f"{name} resubmitted {self.used + 1}/{self.budget} after {self.state} (job {self.job_id})"
        return (f"{name} job {self.job_id} ended {self.state}, resubmitted {self.used} times already "
                f"(RESUBMITS {self.budget}); giving up")


def coming_back(view: JobView, *, requeue: bool, budgets: dict[Component, int] = RESUBMITS) -> bool:
    """Lost but with budget left: the monitor will submit it again (``wait_run`` does not count it gone)."""
    return verdict(view.state, requeue=requeue) == "lost" and view.resubmits < budgets.get(view.component, 0)


class LostJobs:
    """Feed it every poll's views (:meth:`step`); it answers what to resubmit and whether to stop the run."""

    def __init__(self, *, requeue: bool = True, budgets: dict[Component, int] | None = None,
                 confirm_s: float = CONFIRM_S, submit_lag_s: float = SUBMIT_LAG_S) -> None:
        self.requeue = requeue
        self.budgets = dict(RESUBMITS if budgets is None else budgets)
        self.confirm_s = confirm_s
        self.submit_lag_s = submit_lag_s
        self.lost_since: dict[str, float] = {}
        """Job id -> when it was first seen lost (cleared when it looks live again)."""

    def step(self, views: Iterable[JobView], now: float, *, run_over: bool = False) -> list[Action]:
        """``run_over``: the run finished or was cancelled (jobs end on purpose then): nothing is done."""
        if run_over:
            self.lost_since.clear()
            return []
        actions: list[Action] = []
        seen: set[str] = set()
        for v in views:
            if v.component not in self.budgets:  # the coordinator: the monitor's own job
                continue
            lost = verdict(v.state, requeue=self.requeue) == "lost"
            if lost and v.state == UNKNOWN and now - v.submitted_at < self.submit_lag_s:
                lost = False
            if not lost:
                continue
            seen.add(v.job_id)
            since = self.lost_since.setdefault(v.job_id, now)
            if now - since < self.confirm_s:
                continue
            budget = self.budgets[v.component]
            kind: Literal["resubmit", "stop"] = "resubmit" if v.resubmits < budget else "stop"
            actions.append(Action(kind=kind, component=v.component, index=v.index, job_id=v.job_id,
                                  state=v.state, used=v.resubmits, budget=budget))
        self.lost_since = {j: t for j, t in self.lost_since.items() if j in seen}
        return actions
