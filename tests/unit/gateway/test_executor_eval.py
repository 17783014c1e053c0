"""The real executor's evaluation: its own budget for a fresh runtime, infrastructure errors never a score."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from polar_hpc.config.run import EvaluatorSpec, RunConfig, RuntimeSpec
from polar_hpc.evaluate.base import EVALUATION_ERROR, evaluation_failed
from polar_hpc.gateway.executor import SessionExecutor
from polar_hpc.gateway.stages import SessionJob
from polar_hpc.wire.resolved import resolve_session
from polar_hpc.wire.session import Session, Task
from polar_hpc.wire.traces import Trace, TraceStatus, Trajectory


def trajectory() -> Trajectory:
    z = np.zeros(2, dtype=np.int32)
    tr = Trace(prompt_ids=z, response_ids=z, loss_mask=np.ones(2, dtype=np.uint8),
               response_logprobs=np.full(2, -0.5, dtype=np.float32))
    return Trajectory(status=TraceStatus.COMPLETED, traces=[tr])


def job_with(tmp_path: Path, prepare: list[str], command: str) -> tuple[SessionExecutor, SessionJob]:
    work = tmp_path / "work"
    work.mkdir()
    rt = RuntimeSpec(backend="local", workdir=str(work), prepare=prepare, prepare_retries=0)
    ev = EvaluatorSpec(name="command", command=command, fresh_runtime=True, timeout_s=30)
    task = Task(task_id="t", instruction="x", runtime=rt, evaluator=ev)
    ex = SessionExecutor(RunConfig(), proxy=None, proxy_url="", proxy_socket=None,
                         sessions_dir=tmp_path / "sessions", end_of_turn_id=None)
    job = SessionJob(resolve_session(Session(task=task, sample_index=0), RunConfig()), 0.0)
    job.deadline = asyncio.get_running_loop().time() - 5.0  # the session budget is long spent
    return ex, job


async def test_fresh_runtime_prepares_with_its_own_budget(tmp_path: Path) -> None:
    ex, job = job_with(tmp_path, ["sleep 1.5 && touch prepared"], "test -f prepared")
    traj = trajectory()
    try:
        result = await ex.evaluate(job, traj)
    finally:
        await ex.teardown(job)
    assert result is not None and result.outcome_reward == 1.0, result
    assert traj.traces[0].reward == 1.0 and traj.traces[0].trainable is True


async def test_failed_prepare_is_an_evaluation_error_not_a_score(tmp_path: Path) -> None:
    ex, job = job_with(tmp_path, ["exit 7"], "true")
    traj = trajectory()
    try:
        result = await ex.evaluate(job, traj)
    finally:
        await ex.teardown(job)
    assert evaluation_failed(result), result
    assert traj.traces[0].trainable is False
    assert EVALUATION_ERROR in traj.traces[0].filter


async def test_failing_tests_stay_a_trainable_zero(tmp_path: Path) -> None:
    ex, job = job_with(tmp_path, [], "exit 1")
    traj = trajectory()
    try:
        result = await ex.evaluate(job, traj)
    finally:
        await ex.teardown(job)
    assert result is not None and result.outcome_reward == 0.0 and not evaluation_failed(result)
    assert traj.traces[0].reward == 0.0 and traj.traces[0].trainable is True


async def test_uploads_and_the_solution_folder_reach_the_sandbox(tmp_path: Path) -> None:
    """``runtime.uploads`` are copied in at start; a task's ``solution_dir`` goes to /solution under the oracle
    policy only (a no-op or sampled session never sees it). bwrap: both land in folders of the session's own."""
    from polar_hpc.config.run import AgentSpec
    from polar_hpc.wire.session import SOLUTION_DIR

    (tmp_path / "solution").mkdir()
    (tmp_path / "solution" / "helper.py").write_text("print('hi')\n")
    (tmp_path / "data.csv").write_text("a,1\n")
    seen = {}
    for policy in ("oracle", "oracle_noop", "sample"):
        rt = RuntimeSpec(backend="bwrap", workdir="/app", scratch_dirs=["/app"],
                         uploads=[f"{tmp_path / 'data.csv'}:/app/in/data.csv"])
        task = Task(task_id="t", instruction="x", runtime=rt, agent=AgentSpec(policy=policy),  # type: ignore[arg-type]
                    metadata={SOLUTION_DIR: str(tmp_path / "solution")})
        ex = SessionExecutor(RunConfig(), proxy=None, proxy_url="", proxy_socket=None,
                             sessions_dir=tmp_path / f"sessions-{policy}", end_of_turn_id=None)
        job = SessionJob(resolve_session(Session(task=task, sample_index=0), RunConfig()), 0.0)
        try:
            sandbox = await ex._new_runtime(job, None)
            res = await sandbox.exec("cat in/data.csv; ls /solution 2>&1 || true")
        finally:
            await ex.teardown(job)
        seen[policy] = res.stdout
    assert seen["oracle"] == "a,1\nhelper.py\n"
    assert seen["oracle_noop"].startswith("a,1\nls: cannot access '/solution'"), seen
    assert seen["sample"] == seen["oracle_noop"]
