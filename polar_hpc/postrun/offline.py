"""Offline rebuild: saved completion records (JSONL) → trajectories → evaluation → fidelity check → SessionResults,
the gateway's post-run steps (:mod:`.session`) on records saved by an earlier run."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from polar_hpc.config.run import BuilderSpec, EvaluatorSpec, RuntimeSpec
from polar_hpc.evaluate.base import EvalContext
from polar_hpc.postrun.session import build_trajectory, evaluate_trajectory, fidelity_checked
from polar_hpc.runtime import Runtime, make_runtime
from polar_hpc.wire import codec
from polar_hpc.wire.calls import CompletionRecord
from polar_hpc.wire.ids import SessionId
from polar_hpc.wire.results import SessionNotes, SessionResult
from polar_hpc.wire.traces import EvalResult, TraceStatus


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
    results = []
    for session_id, recs in group_sessions(read_records(paths)).items():
        traj = build_trajectory(recs, builder, status, end_of_turn_id=end_of_turn_id)
        sid = SessionId.parse_foreign(session_id)
        result = SessionResult(task_id=sid.task_id, sample_index=sid.sample, attempt=sid.attempt, trajectory=traj,
                               model=recs[0].canonical.model,
                               notes=SessionNotes(session_id=session_id, rebuilt_with=builder.name))
        if evaluator is not None:
            result.evaluation = asyncio.run(_evaluate(evaluator, result, runtime))
        results.append(fidelity_checked(result))
    return results


async def _evaluate(spec: EvaluatorSpec, result: SessionResult, runtime: RuntimeSpec | None) -> EvalResult:
    tmp = tempfile.TemporaryDirectory(prefix="polar-eval-")
    try:
        new_runtime = None
        if runtime is not None:

            async def new_runtime() -> Runtime:
                rt = make_runtime(runtime, Path(tmp.name))
                await rt.start()
                return rt

        ctx = EvalContext(new_runtime=new_runtime, metadata={"offline": True})
        return await evaluate_trajectory(spec, result.trajectory, ctx)
    finally:
        tmp.cleanup()
