"""Offline rebuild: saved completion records (JSONL) → trajectories → evaluation → SessionResults."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from polar_hpc.config.run import BuilderSpec, EvaluatorSpec, RuntimeSpec
from polar_hpc.wire import codec
from polar_hpc.wire.records import CompletionRecord, EvalResult, SessionResult, TraceStatus, parse_session_id


def read_records(paths: Iterable[Path]) -> Iterator[CompletionRecord]:
    """Every record of JSONL files written by the proxy; a bad line fails naming file and line."""
    for path in paths:
        yield from codec.read_jsonl(path, CompletionRecord)


def group_sessions(records: Iterable[CompletionRecord]) -> dict[str, list[CompletionRecord]]:
    sessions: dict[str, list[CompletionRecord]] = {}
    for rec in records:
        sessions.setdefault(rec.session_id, []).append(rec)
    return sessions


def rebuild(paths: list[Path], builder: BuilderSpec, *, evaluator: EvaluatorSpec | None = None,
            end_of_turn_id: int | None = None, status: TraceStatus = TraceStatus.COMPLETED,
            runtime: RuntimeSpec | None = None) -> list[SessionResult]:
    from polar_hpc.trajectory.registry import get_builder

    b = get_builder(builder, end_of_turn_id=end_of_turn_id)
    results = []
    for session_id, recs in group_sessions(read_records(paths)).items():
        traj = b.build(recs, status)
        task_id, sample, attempt = parse_session_id(session_id)
        result = SessionResult(task_id=task_id, sample_index=sample, attempt=attempt, trajectory=traj,
                               model=recs[0].canonical.model,
                               metadata={"session_id": session_id, "rebuilt_with": builder.name})
        if evaluator is not None:
            result.evaluation = asyncio.run(_evaluate(evaluator, result, runtime))
        results.append(result)
    return results


async def _evaluate(spec: EvaluatorSpec, result: SessionResult, runtime: RuntimeSpec | None) -> EvalResult:
    from polar_hpc.evaluate.base import EvalContext, apply_rewards, evaluate_safely
    from polar_hpc.evaluate.registry import get_evaluator

    tmp = tempfile.TemporaryDirectory(prefix="polar-eval-")
    try:
        new_runtime = None
        if runtime is not None:
            from polar_hpc.runtime import Runtime, make_runtime

            async def new_runtime() -> Runtime:
                rt = make_runtime(runtime, Path(tmp.name))
                await rt.start()
                return rt

        ctx = EvalContext(new_runtime=new_runtime, metadata={"offline": True})
        ev = await evaluate_safely(get_evaluator(spec), result.trajectory, ctx)
        apply_rewards(result.trajectory, ev)
        return ev
    finally:
        tmp.cleanup()
