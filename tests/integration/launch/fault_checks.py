"""What the fault tests (local backend and real Slurm) assert about a run that was cut, and how they make a
session sure to be running when the fault lands: every (task, sample) committed exactly once with a real
outcome, the outcome of the session itself (its harness, its budget, its evaluator), never a cut by the system
(a cancel, a drain, an engine gone), whose attempt is released instead and runs again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from polar_hpc.config.run import ACCEPT_REWARD
from polar_hpc.report.run import collect
from polar_hpc.report.run import summarize as summarize_report
from polar_hpc.store import ShardReader
from polar_hpc.store.summary import summarize as summarize_shards
from polar_hpc.wire.codec import from_json
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.waits import read_waits
from tests.fixtures.waits import wait_for
from tests.integration.launch.helpers import ROOT, polar

RECIPE = str(ROOT / "recipes" / "local-shell.toml")
TASKS = ("calc-add", "fizzbuzz-15", "words-reverse")
SYSTEM_CUTS = ("drain", "released", "cancel", "connection", "engine", "exited -15", "exited -9")
"""Words of a cut by the system: no committed session's error may name one."""
LATE_CALL = "agent.command=sleep 4; python3 -m polar_hpc.harness.mini_agent --max-turns 1 {instruction}"
"""The agent makes its one call 4 s into RUN: a fault landed meanwhile finds the session waiting for it."""


def agent_then_sleep(sleep_s: float) -> str:
    """The agent makes its call, then sleeps: a fault landed meanwhile cuts the session after its call."""
    return f"agent.command=python3 -m polar_hpc.harness.mini_agent --max-turns 1 {{instruction}}; sleep {sleep_s}"


def wait_running(run: RunDir, timeout_s: float = 300) -> None:
    def running() -> bool:
        status = run.read_status()
        return status is not None and any(r.occupancy.get("run", 0) for r in status.ranks)

    wait_for(running, timeout_s, "a session to reach RUN", interval_s=0.2)


def wait_paused(run_dir: Path, run: RunDir, timeout_s: float = 120) -> str:
    """The detail of the first rank that says it paused ('' if none did before the run finished or the deadline)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not finished(run):
        paused = next((w.detail for w in read_waits(run_dir).values() if "paused" in w.detail), "")
        if paused:
            return paused
        time.sleep(0.2)
    return ""


def committed(run_dir: Path) -> list[SessionResult]:
    reader = ShardReader(run_dir)
    results = list(reader.results())
    assert not reader.duplicates, f"sessions committed twice: {reader.duplicates}"
    return results


def assert_once_with_real_outcomes(run_dir: Path, samples: int = 1) -> list[SessionResult]:
    results = committed(run_dir)
    assert sorted(r.key for r in results) == sorted(f"{t}/{i}" for t in TASKS for i in range(samples))
    for r in results:
        error = (r.trajectory.error or "").lower()
        assert not any(w in error for w in SYSTEM_CUTS), f"{r.key} committed with a system cut: {error}"
    return results


def finished(run: RunDir) -> bool:
    status = run.read_status()
    return status is not None and status.finished


def assert_views_agree(run_dir: Path) -> None:
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


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def released_attempts(run: RunDir) -> list[SessionResult]:
    """The attempts the system cut, set aside by the ranks (``released/``)."""
    return [from_json(p.read_bytes(), SessionResult) for p in sorted(run.root.glob("released/rank-*/*.json"))]
