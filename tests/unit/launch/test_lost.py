"""The run's monitor of lost jobs, as a pure state machine (launch/lost.py): which Slurm states are resubmitted,
after how long, up to which budget, and the reason the run stops once the budget is spent."""

from __future__ import annotations

import pytest

from polar_hpc.launch.budget import RESUBMITS
from polar_hpc.launch.lost import CONFIRM_S, SUBMIT_LAG_S, JobView, LostJobs, coming_back, verdict
from polar_hpc.util.slurm import LIVE_STATES, UNKNOWN


def _view(state: str, *, component: str = "gateway", resubmits: int = 0, submitted_at: float = 0.0,
          job_id: str = "100_0") -> JobView:
    return JobView(component=component, index=0, job_id=job_id, state=state,  # type: ignore[arg-type]
                   submitted_at=submitted_at, resubmits=resubmits)


@pytest.mark.parametrize("state", ["CANCELLED", "NODE_FAIL", "BOOT_FAIL", "FAILED", "OUT_OF_MEMORY", UNKNOWN])
def test_a_job_gone_without_requeue_is_lost(state: str) -> None:
    assert verdict(state, requeue=True) == "lost"
    assert verdict(state, requeue=False) == "lost"


@pytest.mark.parametrize("state", sorted(LIVE_STATES))
def test_a_queued_running_or_requeued_job_is_live(state: str) -> None:
    assert verdict(state, requeue=True) == "live"


@pytest.mark.parametrize("state", ["PREEMPTED", "TIMEOUT"])
def test_preempted_or_timed_out_and_not_requeued_is_lost_only_when_the_recipe_asks_for_requeue(state: str) -> None:
    assert verdict(state, requeue=True) == "lost"
    assert verdict(state, requeue=False) == "ended"


@pytest.mark.parametrize("state", ["COMPLETED", "DEADLINE", "REVOKED"])
def test_a_job_that_ended_on_purpose_is_left_alone(state: str) -> None:
    assert verdict(state, requeue=True) == "ended"
    assert LostJobs().step([_view(state)], now=1e6) == []


def test_lost_is_resubmitted_only_after_it_looked_lost_for_the_confirm_window() -> None:
    watch = LostJobs()
    assert watch.step([_view("CANCELLED")], now=100.0) == []
    assert watch.step([_view("CANCELLED")], now=100.0 + CONFIRM_S - 0.1) == []
    (action,) = watch.step([_view("CANCELLED")], now=100.0 + CONFIRM_S)
    assert action.kind == "resubmit" and (action.component, action.index, action.state) == ("gateway", 0, "CANCELLED")
    assert action.reason == f"gateway-0 resubmitted 1/{RESUBMITS['gateway']} after CANCELLED (job 100_0)"


def test_a_job_caught_mid_requeue_is_not_resubmitted() -> None:
    """One row says CANCELLED, the next PENDING (a requeue in progress): the window starts over."""
    watch = LostJobs()
    assert watch.step([_view("CANCELLED")], now=0.0) == []
    assert watch.step([_view("PENDING")], now=5.0) == []
    assert watch.step([_view("CANCELLED")], now=CONFIRM_S + 1) == []
    assert watch.step([_view("RUNNING")], now=100.0) == []


def test_a_job_slurm_does_not_list_yet_is_not_lost_until_the_submit_lag() -> None:
    watch = LostJobs()
    fresh = _view(UNKNOWN, submitted_at=1000.0)
    assert watch.step([fresh], now=1000.0) == []
    assert watch.step([fresh], now=1000.0 + SUBMIT_LAG_S - 1) == []
    assert watch.step([fresh], now=1000.0 + SUBMIT_LAG_S) == []  # lost from now on: the window starts
    (action,) = watch.step([fresh], now=1000.0 + SUBMIT_LAG_S + CONFIRM_S)
    assert action.kind == "resubmit" and action.state == UNKNOWN


def test_budget_spent_stops_the_run_with_the_reason() -> None:
    budget = RESUBMITS["inference"]
    watch = LostJobs()
    view = _view("NODE_FAIL", component="inference", resubmits=budget, job_id="300")
    watch.step([view], now=0.0)
    (action,) = watch.step([view], now=CONFIRM_S)
    assert action.kind == "stop"
    assert action.reason == (f"inference-0 job 300 ended NODE_FAIL, resubmitted {budget} times already "
                             f"(RESUBMITS {budget}); giving up")


def test_each_component_has_its_own_count() -> None:
    watch = LostJobs(budgets={"gateway": 1, "inference": 1})
    views = [_view("CANCELLED", resubmits=1, job_id="1"),
             _view("CANCELLED", component="inference", resubmits=0, job_id="2")]
    watch.step(views, now=0.0)
    assert {(a.component, a.kind) for a in watch.step(views, now=CONFIRM_S)} == {("gateway", "stop"),
                                                                               ("inference", "resubmit")}


def test_the_coordinator_is_never_resubmitted_by_its_own_monitor() -> None:
    watch = LostJobs()
    view = _view("CANCELLED", component="coordinator")
    watch.step([view], now=0.0)
    assert watch.step([view], now=CONFIRM_S) == []


def test_nothing_is_done_once_the_run_is_over() -> None:
    """Finished or cancelled: jobs end on purpose (a cancel's scancel shows CANCELLED)."""
    watch = LostJobs()
    watch.step([_view("CANCELLED")], now=0.0)
    assert watch.step([_view("CANCELLED")], now=CONFIRM_S, run_over=True) == []
    assert watch.lost_since == {}


def test_a_resubmitted_job_is_a_new_job_with_its_own_window() -> None:
    watch = LostJobs()
    watch.step([_view("CANCELLED", job_id="1")], now=0.0)
    assert len(watch.step([_view("CANCELLED", job_id="1")], now=CONFIRM_S)) == 1
    assert watch.step([_view("PENDING", job_id="2", resubmits=1)], now=CONFIRM_S + 5) == []
    assert watch.step([_view("FAILED", job_id="2", resubmits=1)], now=CONFIRM_S + 10) == []
    (action,) = watch.step([_view("FAILED", job_id="2", resubmits=1)], now=2 * CONFIRM_S + 10)
    assert action.reason.startswith("gateway-0 resubmitted 2/")


def test_coming_back_is_lost_with_budget_left() -> None:
    assert coming_back(_view("CANCELLED"), requeue=True)
    assert not coming_back(_view("CANCELLED", resubmits=RESUBMITS["gateway"]), requeue=True)
    assert not coming_back(_view("COMPLETED"), requeue=True)
    assert not coming_back(_view("CANCELLED", component="coordinator"), requeue=True)
