"""POSTRUN's work on a session: its trajectory built and evaluated, then its ``SessionResult`` assembled."""

from __future__ import annotations

import asyncio
import contextlib

import msgspec

from polar_hpc.evaluate.base import evaluation_crashed, evaluation_failed, failure_text
from polar_hpc.gateway.stages import SessionExecutor, SessionJob, timed
from polar_hpc.log import get_logger
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import EvalResult, TraceStatus, Trajectory

log = get_logger("gateway.pools")

BUILD_TIMEOUT_S = 300.0


async def build_and_evaluate(executor: SessionExecutor, job: SessionJob) -> tuple[Trajectory, EvalResult | None]:
    if job.failure is not None:
        status, error = job.failure
        return Trajectory(status=status, error=error), None
    assert job.agent is not None
    status = job.agent.trace_status
    try:
        with timed(job, "build"):
            async with asyncio.timeout(BUILD_TIMEOUT_S):
                trajectory = await executor.build(job, status)
    except Exception as err:
        log.warning("session %s: build failed: %r", job.session_id, err)
        return Trajectory(status=TraceStatus.ERROR, error=f"build failed: {err!r}"), None
    trajectory.status = max(trajectory.status, status)
    if status is not TraceStatus.COMPLETED and trajectory.error is None:
        trajectory.error = job.agent.detail or job.agent.status
    if job.prewarm is not None:
        with timed(job, "prewarm_wait"), contextlib.suppress(Exception):
            await job.prewarm
    try:  # evaluation bounds itself (evaluation_timeout_s) and marks the traces of a failed one
        with timed(job, "evaluate"):
            evaluation = await executor.evaluate(job, trajectory)
    except Exception as err:
        log.warning("session %s: evaluation failed: %r", job.session_id, err)
        trajectory.status = TraceStatus.ERROR
        trajectory.error = evaluation_crashed(trajectory, err)
        return trajectory, None
    if evaluation_failed(evaluation):  # infrastructure, not a score: the session is an ERROR
        assert evaluation is not None
        trajectory.status = TraceStatus.ERROR
        trajectory.error = failure_text(evaluation)
    return trajectory, evaluation


def session_result(job: SessionJob, trajectory: Trajectory, evaluation: EvalResult | None, *, model: str,
                   rank: int) -> SessionResult:
    s = job.session
    job.timings["total"] = asyncio.get_running_loop().time() - job.submitted_at
    return SessionResult(
        task_id=s.task.task_id,
        sample_index=s.sample_index,
        attempt=s.attempt,
        trajectory=trajectory,
        evaluation=evaluation,
        timings=dict(job.timings),
        harness=s.task.agent.harness,
        model=model,
        policy_version=s.policy_version,
        gateway_rank=rank,
        group=s.task.group,
        agent=job.agent,
        notes=msgspec.structs.replace(job.notes),
        metadata=dict(s.task.metadata),
    )
