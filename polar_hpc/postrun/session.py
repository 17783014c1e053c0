"""The post-run steps of one session, shared by the gateway (its POSTRUN stage runs them with its own deadlines,
between them the evaluator's prewarm and the sandbox teardown) and by the offline rebuild (:mod:`.offline`):
``build_trajectory`` → ``evaluate_trajectory`` → ``fidelity_checked``."""

from __future__ import annotations

from polar_hpc.config.run import BuilderSpec, EvaluatorSpec
from polar_hpc.evaluate.base import EvalContext, apply_rewards, evaluate_safely
from polar_hpc.evaluate.registry import get_evaluator
from polar_hpc.log import get_logger
from polar_hpc.store.encode import check_session
from polar_hpc.trajectory.registry import get_builder
from polar_hpc.wire.calls import CompletionRecord
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import EvalResult, TraceStatus, Trajectory

log = get_logger("postrun")


def build_trajectory(records: list[CompletionRecord], spec: BuilderSpec, status: TraceStatus, *,
                     end_of_turn_id: int | None) -> Trajectory:
    """The session's records through its builder (CPU work: the gateway runs it in a thread)."""
    return get_builder(spec, end_of_turn_id=end_of_turn_id).build(records, status)


async def evaluate_trajectory(spec: EvaluatorSpec, trajectory: Trajectory, ctx: EvalContext) -> EvalResult:
    """Grade the trajectory (never raises: a crash is an ``evaluation_error`` result) and set its rewards."""
    result = await evaluate_safely(get_evaluator(spec), trajectory, ctx)
    apply_rewards(trajectory, result)
    return result


def fidelity_checked(result: SessionResult) -> SessionResult:
    """The token-fidelity check on every trace written (``store.encode.check_session``). A violating session is
    reported as an ERROR with the reason and without its traces, so a bad trace never reaches a shard or the result
    stream."""
    problem = check_session(result)
    if problem is None:
        return result
    traj = result.trajectory
    log.error("session %s: token fidelity violated, traces dropped: %s", result.key, problem)
    result.notes.fidelity_violation = problem
    result.notes.traces_dropped = len(traj.traces)
    result.trajectory = Trajectory(status=TraceStatus.ERROR, error=f"token fidelity violated: {problem}",
                                   stats=traj.stats)
    return result
