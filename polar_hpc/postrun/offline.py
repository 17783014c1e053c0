"""Offline rebuild: saved completion records (JSONL) → trajectories → evaluation → fidelity check → SessionResults,
the gateway's post-run steps (:mod:`.session`) on records saved by an earlier run."""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from polar_hpc.config.run import BuilderSpec, EvaluatorSpec, RuntimeSpec
from polar_hpc.evaluate.base import EvalContext
from polar_hpc.postrun.session import build_trajectory, evaluate_trajectory, fidelity_checked
from polar_hpc.runtime import Runtime, make_runtime
from polar_hpc.wire import codec
from polar_hpc.wire.records import CompletionRecord, EvalResult, SessionResult, TraceStatus

_SESSION_ID = re.compile(r"^(?P<task>.+)/(?P<sample>\d+)#(?P<attempt>\d+)$")


def read_records(paths: Iterable[Path]) -> Iterator[CompletionRecord]:
    """Every record of JSONL files written by the proxy; a bad line fails naming file and line."""
    dec = codec.json_decoder(CompletionRecord)
    for path in paths:
        with open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield dec.decode(line)
                except msgspec.DecodeError as err:
                    raise ValueError(f"{path}:{n}: not a CompletionRecord: {err}") from None


def group_sessions(records: Iterable[CompletionRecord]) -> dict[str, list[CompletionRecord]]:
    sessions: dict[str, list[CompletionRecord]] = {}
    for rec in records:
        sessions.setdefault(rec.session_id, []).append(rec)
    return sessions


def session_identity(session_id: str) -> tuple[str, int, int]:
    """``task/sample#attempt`` as Session.session_id writes it; any other id is a task id of its own."""
    m = _SESSION_ID.match(session_id)
    if m is None:
        return session_id, 0, 0
    return m["task"], int(m["sample"]), int(m["attempt"])


def rebuild(paths: list[Path], builder: BuilderSpec, *, evaluator: EvaluatorSpec | None = None,
            end_of_turn_id: int | None = None, status: TraceStatus = TraceStatus.COMPLETED,
            runtime: RuntimeSpec | None = None) -> list[SessionResult]:
    results = []
    for session_id, recs in group_sessions(read_records(paths)).items():
        traj = build_trajectory(recs, builder, status, end_of_turn_id=end_of_turn_id)
        task_id, sample, attempt = session_identity(session_id)
        result = SessionResult(task_id=task_id, sample_index=sample, attempt=attempt, trajectory=traj,
                               model=recs[0].canonical.model,
                               metadata={"session_id": session_id, "rebuilt_with": builder.name})
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
