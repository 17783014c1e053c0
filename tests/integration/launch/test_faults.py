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

from polar_hpc.config.run import ACCEPT_REWARD
from polar_hpc.launch.monitor import _component_pid, wait_run
from polar_hpc.store import ShardReader
from polar_hpc.store.summary import summarize as summarize_shards
from polar_hpc.train.report import collect
from polar_hpc.train.report import summarize as summarize_report
from polar_hpc.util.proc import signal_tree
from polar_hpc.wire.codec import from_json
from polar_hpc.wire.records import SessionResult, TraceStatus
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.waits import read_waits
from tests.fixtures.waits import wait_for
from tests.integration.launch.helpers import ROOT, polar, stop_run

pytestmark = pytest.mark.slow

RECIPE = str(ROOT / "recipes" / "local-shell.toml")
TASKS = ("calc-add", "fizzbuzz-15", "words-reverse")
SYSTEM_CUTS = ("drain", "released", "cancel", "connection", "engine")
"""Words of a cut by the system: no committed session's error may name one."""


def _agent(sleep_s: float) -> str:
    return f"agent.command=python3 -m polar_hpc.harness.mini_agent --max-turns 1 {{instruction}}; sleep {sleep_s}"


def _wait_running(run: RunDir, timeout_s: float = 300) -> None:
    def running() -> bool:
        status = run.read_status()
        return status is not None and any(r.occupancy.get("run", 0) for r in status.ranks)

    wait_for(running, timeout_s, "a session to reach RUN", interval_s=0.2)


def _committed(run_dir: Path) -> list[SessionResult]:
    reader = ShardReader(run_dir)
    results = list(reader.results())
    assert not reader.duplicates, f"sessions committed twice: {reader.duplicates}"
    return results


def _assert_once_with_real_outcomes(run_dir: Path, samples: int = 1) -> list[SessionResult]:
    results = _committed(run_dir)
    assert sorted(r.key for r in results) == sorted(f"{t}/{i}" for t in TASKS for i in range(samples))
    for r in results:
        error = (r.trajectory.error or "").lower()
        assert not any(w in error for w in SYSTEM_CUTS), f"{r.key} committed with a system cut: {error}"
    return results


def _finished(run: RunDir) -> bool:
    status = run.read_status()
    return status is not None and status.finished


def _assert_views_agree(run_dir: Path) -> None:
    """status.json (what `status` and the live display show), `report` and `shards inspect` count the same run
    alike; the coordinator's counts include the sessions an earlier life of the run committed."""
    status = RunDir(run_dir).read_status()
    assert status is not None and status.finished and status.ranks_alive == 0
    rows, _ = collect([run_dir], ACCEPT_REWARD)
    report = summarize_report(rows, [str(run_dir)], ACCEPT_REWARD, [])
    inspect = summarize_shards(ShardReader(run_dir))
    assert status.sessions.get("committed") == report.overall.sessions == inspect.sessions
    assert status.accepted == report.overall.accepted
    assert status.failed == report.statuses.get("ERROR", 0) == inspect.statuses.get("ERROR", 0)
    assert inspect.reward_mean is not None
    assert status.reward_mean == pytest.approx(inspect.reward_mean, abs=1e-9)  # the same stored rewards, summed
    line = polar("status", str(run_dir)).stdout
    done = report.overall.sessions
    assert f"sessions {done}/{done} done ({done} committed)  accepted {report.overall.accepted}" in line, line


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _released(run: RunDir) -> list[SessionResult]:
    return [from_json(p.read_bytes(), SessionResult) for p in sorted(run.root.glob("released/rank-*/*.json"))]


@pytest.mark.timeout(900)
def test_cancel_mid_session_then_resume_runs_every_session_once(run_dir: Path) -> None:
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=1",
                "--set", "gateway.drain_grace_s=2", "--set", "gateway.run_pool=3", "--set", "gateway.init_pool=3",
                "--set", _agent(8))
    assert out.returncode == 0, out.stdout + out.stderr
    _wait_running(run)
    t0 = time.monotonic()
    out = polar("cancel", str(run_dir), timeout=120)
    cancel_s = time.monotonic() - t0
    assert out.returncode == 0, out.stdout + out.stderr
    assert cancel_s < 30, f"cancel took {cancel_s:.1f}s with a 2s drain"
    released = _released(run)
    assert released, "a session in RUN at the cancel was cut: its attempt is set aside"
    for r in released:
        assert "drain" in r.metadata["released"]["reason"] and r.metadata["released"]["host"]
    cut = {r.key for r in released}
    assert not cut & {r.key for r in _committed(run_dir)}, "a released session was committed"
    st = polar("status", str(run_dir))
    assert "cancelled" in st.stdout, st.stdout
    out = polar("resume", str(run_dir), "--wait", "--timeout", "500", timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    results = _assert_once_with_real_outcomes(run_dir)
    assert cut <= {r.key for r in results}
    _assert_views_agree(run_dir)
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
                "--set", "agent.command=sleep 4; python3 -m polar_hpc.harness.mini_agent --max-turns 1 {instruction}")
    assert out.returncode == 0, out.stdout + out.stderr
    _wait_running(run)
    jobs = run.read_jobs()
    assert jobs is not None
    (server,) = [j for j in jobs.jobs if j.component == "inference"]
    pid = _component_pid(run, server)
    assert pid is not None
    supervisor = _parent(pid)  # the job body that restarts it (polar_hpc.launch.jobs.ComponentJob)
    os.kill(supervisor, signal.SIGSTOP)
    try:
        signal_tree(pid, signal.SIGKILL)  # the component and the server process it runs
        paused = ""

        def paused_or_finished() -> bool:
            nonlocal paused
            paused = next((w.detail for w in read_waits(run_dir).values() if "paused" in w.detail), "")
            return bool(paused) or _finished(run)

        wait_for(paused_or_finished, 120, "a rank paused for inference-0 (or the run's end)", interval_s=0.2)
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
    released = _released(run)
    assert released and all("engine went away" in r.metadata["released"]["reason"] for r in released)
    results = _assert_once_with_real_outcomes(run_dir)
    assert {r.key for r in released} <= {r.key for r in results}


@pytest.mark.timeout(900)
def test_truncated_committed_shard_is_named_and_its_sessions_run_again(run_dir: Path) -> None:
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=1",
                "--set", "shards.max_sessions=1", "--set", _agent(0), "--wait", "--timeout", "500", timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    shards = sorted(run.shards.glob("*.h5"))
    assert len(shards) == 3
    victim = shards[1]
    (lost,) = [r.key for r in ShardReader([victim]).results()]
    with victim.open("r+b") as fh:
        fh.truncate(victim.stat().st_size // 2)
    val = polar("shards", "validate", str(run.shards))
    assert val.returncode == 1 and victim.name in val.stdout + val.stderr, val.stdout + val.stderr
    assert lost not in {r.key for r in _committed(run_dir)}, "readers skip the broken shard"
    out = polar("resume", str(run_dir), "--wait", "--timeout", "500", timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    assert victim.name in out.stderr, "resume names the shard whose sessions run again"
    results = _assert_once_with_real_outcomes(run_dir)
    assert {r.key: r for r in results}[lost].gateway_rank == 0


@pytest.mark.timeout(900)
def test_sigstop_of_the_coordinator_past_the_heartbeat_timeout(run_dir: Path) -> None:
    """The coordinator freezes longer than the heartbeat timeout (the ranks lose it and reconnect; it wakes to
    ranks silent past their timeout) and goes on: every session still ends committed once."""
    run = RunDir(run_dir)
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "tasks.num_samples=2",
                "--set", "coordinator.heartbeat_timeout_s=3", "--set", _agent(3))
    assert out.returncode == 0, out.stdout + out.stderr
    _wait_running(run)
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
    _assert_once_with_real_outcomes(run_dir, samples=2)


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
    by_task = {r.task_id: r for r in _assert_once_with_real_outcomes(run_dir)}
    killed, hung = by_task["fizzbuzz-15"], by_task["words-reverse"]
    assert killed.trajectory.status is TraceStatus.ERROR and killed.attempt == 0
    assert "harness exited" in (killed.trajectory.error or ""), killed.trajectory.error
    assert hung.trajectory.status is TraceStatus.TIMEOUT and hung.attempt == 0
    assert "session budget 25s spent in INIT" in (hung.trajectory.error or ""), hung.trajectory.error
    assert not _released(RunDir(run_dir)), "no session was cut by the system"


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
                "--set", "shards.max_sessions=1", "--set", _agent(0))
    assert out.returncode == 0, out.stdout + out.stderr
    assert _mount_tmpfs(run.shards, "100k"), "a 100 KiB file system for the shards (not three shards of this run)"
    try:
        blocked = ""

        def blocked_or_finished() -> bool:
            nonlocal blocked
            blocked = next((w.detail for w in read_waits(run_dir).values() if "cannot publish" in w.detail), "")
            return bool(blocked) or _finished(run)

        wait_for(blocked_or_finished, 300, "a rank that cannot publish shards (or the run's end)", interval_s=0.2)
        assert "No space left" in blocked or "ENOSPC" in blocked or "space" in blocked.lower(), blocked
        assert "cannot publish shards" in polar("status", str(run_dir)).stdout
        assert not list(run.shards.glob("*.tmp")), "nothing half-written is left"
        if list(run.shards.glob("*.h5")):
            val = polar("shards", "validate", str(run.shards))
            assert val.returncode == 0, "what was published is whole: " + val.stdout + val.stderr
        assert _mount_tmpfs(run.shards, "16m", remount=True)
        assert wait_run(run, timeout_s=500, interval_s=1.0) == 0
        _assert_once_with_real_outcomes(run_dir)
        val = polar("shards", "validate", str(run.shards))
        assert val.returncode == 0, val.stdout + val.stderr
    finally:
        stop_run(run_dir)
        subprocess.run(["umount", "-l", str(run.shards)], check=False)
