"""Faults on the local backend, each ending with every (task, sample) committed exactly once with a real outcome:
the session's own (its harness, its budget, its evaluator), never a cut by the system (a cancel, a drain, an engine
gone), whose attempt is released instead and runs again.

Real reference server (tiny Qwen3), coordinator, gateway, bwrap sandboxes and the shell harness's agent
(``recipes/local-shell.toml``); the agent sleeps after its calls so a session is surely in RUN when the fault
lands.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from polar_hpc.launch.monitor import _component_pid, wait_run
from polar_hpc.store import ShardReader
from polar_hpc.util.proc import signal_tree
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.traces import TraceStatus
from polar_hpc.wire.waits import read_waits
from tests.integration.launch.fault_checks import (
    LATE_CALL,
    RECIPE,
    agent_then_sleep,
    assert_once_with_real_outcomes,
    assert_views_agree,
    committed,
    finished,
    parent,
    released_attempts,
    wait_paused,
    wait_running,
)
from tests.integration.launch.helpers import polar, stop_run

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)
def test_cancel_mid_session_then_resume_runs_every_session_once(run_dir: Path) -> None:
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=1",
                "--set", "gateway.drain_grace_s=2", "--set", "gateway.run_pool=3", "--set", "gateway.init_pool=3",
                "--set", agent_then_sleep(8))
    assert out.returncode == 0, out.stdout + out.stderr
    wait_running(run)
    t0 = time.monotonic()
    out = polar("cancel", str(run_dir), timeout=120)
    cancel_s = time.monotonic() - t0
    assert out.returncode == 0, out.stdout + out.stderr
    assert cancel_s < 30, f"cancel took {cancel_s:.1f}s with a 2s drain"
    released = released_attempts(run)
    assert released, "a session in RUN at the cancel was cut: its attempt is set aside"
    for r in released:
        assert "drain" in r.released.reason and r.released.host
    cut = {r.key for r in released}
    assert not cut & {r.key for r in committed(run_dir)}, "a released session was committed"
    st = polar("status", str(run_dir))
    assert "cancelled" in st.stdout, st.stdout
    out = polar("resume", str(run_dir), "--wait", "--timeout", "500", timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    results = assert_once_with_real_outcomes(run_dir)
    assert cut <= {r.key for r in results}
    assert_views_agree(run_dir)
    out = polar("cancel", str(run_dir), timeout=60)
    assert out.returncode == 0 and "already finished" in out.stdout, out.stdout + out.stderr
    assert run.cancelled() is None, "cancel of a finished run changes nothing"


@pytest.mark.timeout(900)
def test_kill_9_of_the_inference_server_mid_session(run_dir: Path) -> None:
    """The server dies under a running session: its call fails fast, the session is released (not an outcome), the
    rank pauses and says so, the job restarts the server, and the run finishes with every session once.

    The job's supervisor is held (SIGSTOP) from the kill until the rank has paused, so the session surely finds no
    server (a restart within the engine client's retries would hide the fault from it)."""
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=1",
                "--set", "gateway.run_pool=1", "--set", "gateway.init_pool=1",
                "--set", LATE_CALL)
    assert out.returncode == 0, out.stdout + out.stderr
    wait_running(run)
    jobs = run.read_jobs()
    assert jobs is not None
    (server,) = [j for j in jobs.jobs if j.component == "inference"]
    pid = _component_pid(run, server)
    assert pid is not None
    supervisor = parent(pid)  # the job body that restarts it (polar_hpc.launch.jobs.ComponentJob)
    os.kill(supervisor, signal.SIGSTOP)
    try:
        signal_tree(pid, signal.SIGKILL)  # the component and the server process it runs
        paused = wait_paused(run_dir, run)
    finally:
        os.kill(supervisor, signal.SIGCONT)
    assert "inference-0" in paused, "the paused rank says in waits/ (shown by status) what it waits for"
    st = polar("status", str(run_dir))
    assert "paused, waiting for inference-0" in st.stdout, st.stdout
    code = wait_run(run, timeout_s=500, interval_s=1.0)
    assert code == 0, f"the run did not finish after the server restart ({code})"
    restarted = _component_pid(run, server)
    assert restarted is not None and restarted != pid, "the job restarted its inference server"
    assert not read_waits(run_dir), "the rank's wait ended when the server answered again"
    released = released_attempts(run)
    assert released and all("engine went away" in r.released.reason for r in released)
    results = assert_once_with_real_outcomes(run_dir)
    assert {r.key for r in released} <= {r.key for r in results}


@pytest.mark.timeout(900)
def test_truncated_committed_shard_is_named_and_its_sessions_run_again(run_dir: Path) -> None:
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=1",
                "--set", "shards.max_sessions=1", "--set", agent_then_sleep(0), "--wait", "--timeout", "500",
                timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    shards = sorted(run.shards.glob("*.h5"))
    assert len(shards) == 3
    victim = shards[1]
    (lost,) = [r.key for r in ShardReader([victim]).results()]
    with victim.open("r+b") as fh:
        fh.truncate(victim.stat().st_size // 2)
    val = polar("shards", "validate", str(run.shards))
    assert val.returncode == 1 and victim.name in val.stdout + val.stderr, val.stdout + val.stderr
    assert lost not in {r.key for r in committed(run_dir)}, "readers skip the broken shard"
    out = polar("resume", str(run_dir), "--wait", "--timeout", "500", timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    assert victim.name in out.stderr, "resume names the shard whose sessions run again"
    results = assert_once_with_real_outcomes(run_dir)
    assert {r.key: r for r in results}[lost].gateway_rank == 0


@pytest.mark.timeout(900)
def test_sigstop_of_the_coordinator_past_the_heartbeat_timeout(run_dir: Path) -> None:
    """The coordinator freezes longer than the heartbeat timeout (the ranks lose it and reconnect; it wakes to
    ranks silent past their timeout) and goes on: every session still ends committed once."""
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=2",
                "--set", "coordinator.heartbeat_timeout_s=3", "--set", agent_then_sleep(3))
    assert out.returncode == 0, out.stdout + out.stderr
    wait_running(run)
    jobs = run.read_jobs()
    assert jobs is not None
    (coordinator,) = [j for j in jobs.jobs if j.component == "coordinator"]
    pid = _component_pid(run, coordinator)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(8)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert wait_run(run, timeout_s=500, interval_s=1.0) == 0
    assert_once_with_real_outcomes(run_dir, samples=2)


PREPARE = '["git init -q . && git add -A && git -c user.email=d@p -c user.name=p commit -qm base", ' \
    '"if [ -f words.py ]; then sleep 600; fi"]'
"""The recipe's prepare step, then one that hangs in the words-reverse task's sandbox."""


@pytest.mark.timeout(900)
def test_sigkilled_harness_and_hanging_prepare_are_the_sessions_own_outcomes(run_dir: Path) -> None:
    """A harness killed by SIGKILL (as by the OOM killer) is its own failure: ERROR, committed once. A prepare step
    that hangs spends the session's own budget: TIMEOUT in INIT, committed once. Neither is rerun."""
    agent = ("agent.command=if [ -f fizzbuzz.py ]; then kill -9 $$; fi; "
             "python3 -m polar_hpc.harness.mini_agent --max-turns 1 {instruction}")
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=1",
                "--set", f"runtime.prepare={PREPARE}", "--set", "gateway.session_timeout_s=25",
                "--set", "gateway.agent_timeout_s=20", "--set", "gateway.init_pool=3", "--set", agent,
                "--wait", "--timeout", "500", timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    by_task = {r.task_id: r for r in assert_once_with_real_outcomes(run_dir)}
    killed, hung = by_task["fizzbuzz-15"], by_task["words-reverse"]
    assert killed.trajectory.status is TraceStatus.ERROR and killed.attempt == 0
    assert "harness exited" in (killed.trajectory.error or ""), killed.trajectory.error
    assert hung.trajectory.status is TraceStatus.TIMEOUT and hung.attempt == 0
    assert "session budget 25s spent in INIT" in (hung.trajectory.error or ""), hung.trajectory.error
    assert not released_attempts(RunDir(run_dir)), "no session was cut by the system"


def _mount_tmpfs(path: Path, size: str, remount: bool = False) -> bool:
    opts = f"remount,size={size}" if remount else f"size={size}"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    return done.returncode == 0


@pytest.mark.timeout(900)
def test_shard_dir_out_of_space(run_dir: Path, tmp_path: Path) -> None:
    """The shards' file system fills up: the rank stops taking sessions and says why (status), publishes nothing
    half-written, keeps what it holds; once there is room the run finishes with every session once."""
    (tmp_path / "probe").mkdir()
    if not _mount_tmpfs(tmp_path / "probe", "64k"):
        pytest.skip("mounting a tmpfs needs root (CAP_SYS_ADMIN); the out-of-space test cannot make a small disk")
    subprocess.run(["umount", str(tmp_path / "probe")], check=False)
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=1",
                "--set", "shards.max_sessions=1", "--set", agent_then_sleep(0))
    assert out.returncode == 0, out.stdout + out.stderr
    assert _mount_tmpfs(run.shards, "100k"), "a 100 KiB file system for the shards (not three shards of this run)"
    try:
        blocked = ""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not blocked and not finished(run):
            blocked = next((w.detail for w in read_waits(run_dir).values() if "cannot publish" in w.detail), "")
            time.sleep(0.2)
        assert "No space left" in blocked or "ENOSPC" in blocked or "space" in blocked.lower(), blocked
        assert "cannot publish shards" in polar("status", str(run_dir)).stdout
        assert not list(run.shards.glob("*.tmp")), "nothing half-written is left"
        if list(run.shards.glob("*.h5")):
            val = polar("shards", "validate", str(run.shards))
            assert val.returncode == 0, "what was published is whole: " + val.stdout + val.stderr
        assert _mount_tmpfs(run.shards, "16m", remount=True)
        assert wait_run(run, timeout_s=500, interval_s=1.0) == 0
        assert_once_with_real_outcomes(run_dir)
        val = polar("shards", "validate", str(run.shards))
        assert val.returncode == 0, val.stdout + val.stderr
    finally:
        stop_run(run_dir)
        subprocess.run(["umount", "-l", str(run.shards)], check=False)
