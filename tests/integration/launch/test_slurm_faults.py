"""Faults on the real single-node Slurm cluster (.ci/slurm.sh; SLURM_CONF set by tools/test.sh), each ending with
every (task, sample) committed exactly once with a real outcome (tests/integration/launch/fault_checks.py): the
inference server killed under a running session (its job restarts it in place), then its job preempted (it is
requeued and comes back on a new port, which the gateway follows), in one run; a cancel mid-session then resume.

One gateway rank, one sample per task, the shell harness's agent against the real reference server (tiny Qwen3)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from polar_hpc.launch.monitor import _component_pid, component_states, sacct_states, wait_run
from polar_hpc.util.proc import read_pid_file, signal_tree
from polar_hpc.wire.endpoints import read_endpoint
from polar_hpc.wire.rundir import JobRecord, RunDir
from polar_hpc.wire.waits import read_waits
from tests.integration.launch.fault_checks import (
    LATE_CALL,
    RECIPE,
    agent_then_sleep,
    assert_once_with_real_outcomes,
    assert_views_agree,
    committed,
    parent,
    released_attempts,
    wait_paused,
    wait_running,
)
from tests.integration.launch.helpers import SLURM_SETS, polar, require_slurm, start_if_held, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ONE_RANK = [*SLURM_SETS, "--set", "gateway.num_ranks=1", "--set", "tasks.num_samples=1"]
ONE_AT_A_TIME = ["--set", "gateway.run_pool=1", "--set", "gateway.init_pool=1", "--set", LATE_CALL]
"""One session in RUN at a time, making its call 4 s in: the fault surely lands before it."""


@pytest.fixture(autouse=True)
def _slurm_up() -> None:
    require_slurm()


def _job(run: RunDir, component: str) -> JobRecord:
    jobs = run.read_jobs()
    assert jobs is not None
    (job,) = [j for j in jobs.jobs if j.component == component]
    return job


def _job_log(run: RunDir, job: JobRecord) -> str:
    return "".join(p.read_text(errors="replace") for p in run.job_logs(job.component, job.job_id).glob("*.out"))


@pytest.mark.timeout(700)
def test_inference_server_killed_then_its_job_preempted_mid_session(run_dir: Path) -> None:
    """One run, two engine faults, each under a running session, which is released (not an outcome) while the rank
    pauses and says so with the server job's state:

    1. kill -9 of the server: the job (the same Slurm job) restarts it in place. The job body is held (SIGSTOP)
       until the rank paused, so the session surely finds no server.
    2. USR2 to the job (a preemption, or the walltime signal): submitit's checkpoint stops the server and requeues
       the job; the rank says the job is pending; back on a new port, its new endpoint is followed.

    The run then finishes with every session committed once with a real outcome."""
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *ONE_RANK, *ONE_AT_A_TIME)
    assert out.returncode == 0, out.stdout + out.stderr
    wait_running(run)
    server = _job(run, "inference")
    pid = _component_pid(run, server)
    assert pid is not None
    supervisor = parent(pid)  # the job body (polar_hpc.launch.jobs.ComponentJob under submitit)
    os.kill(supervisor, signal.SIGSTOP)
    try:
        signal_tree(pid, signal.SIGKILL)
        paused = wait_paused(run_dir, run)
    finally:
        os.kill(supervisor, signal.SIGCONT)
    assert paused.startswith(f"paused, waiting for inference-0 to answer again (inference-0: job {server.job_id} "
                             "RUNNING"), paused
    wait_until(lambda: not read_waits(run_dir), 180, "the rank to take sessions again once the server answers")
    record = read_pid_file(run.pid_file("inference", 0))
    assert record is not None and record[0] != pid, "the job started a new server"
    assert "inference-0 exited with status -9 while the run goes on; restarting it (1 of 3)" in _job_log(run, server)
    before = read_endpoint(run_dir, "inference-0")
    assert before is not None

    subprocess.run(["scancel", "--signal=USR2", server.job_id], check=True, timeout=30)
    pending = f"inference-0: job {server.job_id} PENDING"

    def says_pending() -> bool:
        return any(pending in w.detail and w.detail.startswith("paused") for w in read_waits(run_dir).values())

    wait_until(says_pending, 120, f"the paused rank to say {pending!r}")
    assert pending in polar("status", str(run_dir)).stdout
    tried = [time.monotonic() - 10.0]  # the first start 5 s after the requeue

    def back() -> bool:
        start_if_held(server.job_id, tried)
        now = read_endpoint(run_dir, "inference-0")
        return now is not None and now.started_at > before.started_at

    wait_until(back, 300, "the requeued inference job to publish a new endpoint")
    assert wait_run(run, timeout_s=300, interval_s=1.0) == 0
    log = _job_log(run, server)
    assert "Calling checkpoint method" in log and "Requeued job" in log, log[-3000:]
    released = released_attempts(run)
    assert len(released) >= 2, "each fault cut a running session"
    assert all("engine went away" in r.released.reason for r in released), released
    assert {r.key for r in released} <= {r.key for r in assert_once_with_real_outcomes(run_dir)}


@pytest.mark.timeout(700)
def test_cancel_mid_session_then_resume_on_slurm(run_dir: Path) -> None:
    run = RunDir(run_dir)
    # the cut comes at 3/4 of the drain grace; the rest sets the released attempts aside (slow on a busy machine)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *ONE_RANK, "--set", "gateway.drain_grace_s=6",
                "--set", "gateway.run_pool=3", "--set", "gateway.init_pool=3", "--set", agent_then_sleep(12))
    assert out.returncode == 0, out.stdout + out.stderr
    wait_running(run)
    out = polar("cancel", str(run_dir), timeout=200)
    assert out.returncode == 0, out.stdout + out.stderr
    jobs = run.read_jobs()
    assert jobs is not None
    wait_until(lambda: not any(c.alive for c in component_states(run, jobs)), 120, "every job to end")
    assert all(s != "FAILED" for s in sacct_states([j.job_id for j in jobs.jobs]).values()), "a cancel is no failure"
    released = released_attempts(run)
    assert released and all("drain" in r.released.reason for r in released), released
    cut = {r.key for r in released}
    assert not cut & {r.key for r in committed(run_dir)}, "a released session was committed"
    assert "cancelled at" in polar("status", str(run_dir)).stdout
    out = polar("resume", str(run_dir), "--wait", "--timeout", "400", timeout=460)
    assert out.returncode == 0, out.stdout + out.stderr
    assert cut <= {r.key for r in assert_once_with_real_outcomes(run_dir)}
    assert_views_agree(run_dir)
