"""A gateway rank's job cancelled by hand on the real single-node Slurm cluster (.ci/slurm.sh): the run's monitor
(the coordinator's job body, launch/resubmit.py) submits it again by itself, `status` says so, and every
(task, sample) is committed exactly once with a real outcome (tests/integration/launch/fault_checks.py).

Two gateway ranks (an array), two samples per task (more sessions than one rank takes at once: both get some),
one session in RUN per rank, each session sleeping after its call: the cancel lands mid-session and the other rank
cannot finish everything before the resubmitted one joins."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from polar_hpc.launch.budget import RESUBMITS
from polar_hpc.launch.monitor import sacct_states, wait_run
from polar_hpc.wire.rundir import JobRecord, RunDir
from tests.integration.launch.fault_checks import (
    RECIPE,
    agent_then_sleep,
    assert_once_with_real_outcomes,
    assert_views_agree,
    released_attempts,
)
from tests.integration.launch.helpers import SLURM_SETS, polar, require_slurm, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _slurm_up() -> None:
    require_slurm()


def _gateway0(run: RunDir) -> JobRecord:
    jobs = run.read_jobs()
    assert jobs is not None
    (job,) = [j for j in jobs.jobs if j.component == "gateway" and j.index == 0]
    return job


def _rank0_running(run: RunDir) -> bool:
    status = run.read_status()
    return status is not None and any(r.rank == 0 and r.alive and r.occupancy.get("run", 0) for r in status.ranks)


@pytest.mark.timeout(700)
def test_gateway_array_task_cancelled_by_hand_is_resubmitted_and_every_session_committed_once(run_dir: Path) -> None:
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, "--set", "tasks.num_samples=2",
                "--set", "gateway.run_pool=1", "--set", "gateway.init_pool=1",
                "--set", "coordinator.heartbeat_timeout_s=10", "--set", agent_then_sleep(15))
    assert out.returncode == 0, out.stdout + out.stderr
    lost = _gateway0(run)
    assert "_" in lost.job_id, f"the gateway ranks are an array: {lost.job_id}"
    wait_until(lambda: _rank0_running(run), 300, "gateway-0 to run a session")
    subprocess.run(["scancel", lost.job_id], check=True, timeout=30)
    cancelled_at = time.monotonic()

    wait_until(lambda: _gateway0(run).job_id != lost.job_id, 120, "the monitor to resubmit gateway-0")
    print(f"resubmitted {time.monotonic() - cancelled_at:.1f}s after the scancel")
    again = _gateway0(run)
    assert (again.resubmits, again.lost_job, again.lost_state) == (1, lost.job_id, "CANCELLED"), again
    said = f"gateway-0 resubmitted 1/{RESUBMITS['gateway']} after CANCELLED (job {lost.job_id})"
    assert said in polar("status", str(run_dir)).stdout

    assert wait_run(run, timeout_s=480, interval_s=1.0) == 0, "the run finished (no 'every gateway rank ended')"
    states = sacct_states([lost.job_id, again.job_id])
    assert states.get(lost.job_id) == "CANCELLED" and states.get(again.job_id) != "FAILED", states
    assert assert_once_with_real_outcomes(run_dir, samples=2)
    assert_views_agree(run_dir)
    assert said in polar("status", str(run_dir)).stdout
    print("released:", [r.released.reason for r in released_attempts(run)])


@pytest.mark.timeout(700)
def test_a_gateway_lost_once_more_than_its_budget_stops_the_run_saying_why_then_resume_goes_on(
        run_dir: Path) -> None:
    """gateway-0's record says it was resubmitted RESUBMITS times already (as if lost that often before): lost once
    more, the monitor stops the run as a cancel does, with the reason in `status` and `--wait`; `resume` (a fresh
    count) finishes it, every session committed once."""
    import msgspec

    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, "--set", "tasks.num_samples=2",
                "--set", "gateway.run_pool=1", "--set", "gateway.init_pool=1", "--set", agent_then_sleep(15))
    assert out.returncode == 0, out.stdout + out.stderr
    wait_until(lambda: _rank0_running(run), 300, "gateway-0 to run a session")
    jobs = run.read_jobs()
    assert jobs is not None
    budget = RESUBMITS["gateway"]
    jobs.jobs = [msgspec.structs.replace(j, resubmits=budget) if (j.component, j.index) == ("gateway", 0) else j
                 for j in jobs.jobs]
    run.write_jobs(jobs)
    lost = _gateway0(run)
    subprocess.run(["scancel", lost.job_id], check=True, timeout=30)
    lines: list[str] = []
    assert wait_run(run, timeout_s=300, interval_s=1.0, report=lines.append) == 1
    reason = (f"gateway-0 job {lost.job_id} ended CANCELLED, resubmitted {budget} times already "
              f"(RESUBMITS {budget}); giving up")
    assert reason in lines[-1], lines
    assert _gateway0(run).job_id == lost.job_id, "not resubmitted"
    status = polar("status", str(run_dir)).stdout
    assert "stopped at " in status and reason in status, status
    coordinator = [j for j in (run.read_jobs() or jobs).jobs if j.component == "coordinator"][0]
    wait_until(lambda: sacct_states([coordinator.job_id]).get(coordinator.job_id) == "FAILED", 120,
           "the coordinator's job to end FAILED")
    out = polar("resume", str(run_dir), "--wait", "--timeout", "400", timeout=460)
    assert out.returncode == 0, out.stdout + out.stderr
    assert _gateway0(run).resubmits == 0, "resume starts the count again"
    assert assert_once_with_real_outcomes(run_dir, samples=2)
