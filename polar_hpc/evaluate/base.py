"""Evaluator contract: ``async evaluate(trajectory, ctx) -> EvalResult``, and how rewards reach the traces."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from polar_hpc.config.run import EvaluatorSpec
from polar_hpc.log import get_logger
from polar_hpc.wire.records import EvalResult, Session, Trajectory

if TYPE_CHECKING:
    from polar_hpc.runtime.base import Runtime

log = get_logger("evaluate")


@dataclass
class EvalContext:
    """What an evaluator may use. In-process only (holds live runtimes), never sent over the wire."""

    session: Session | None = None
    runtime: Runtime | None = None
    """The session's runtime, still running (the agent's workspace as it left it)."""
    new_runtime: Callable[[], Awaitable[Runtime]] | None = None
    """Starts and prepares a fresh runtime from the task's spec; the evaluator stops it when done."""
    metadata: dict[str, Any] = field(default_factory=dict)


class Evaluator(ABC):
    name: ClassVar[str] = ""

    def __init__(self, spec: EvaluatorSpec | None = None) -> None:
        self.spec = spec or EvaluatorSpec(name=self.name)

    @abstractmethod
    async def evaluate(self, trajectory: Trajectory, ctx: EvalContext) -> EvalResult: ...


def zero(reason: str, **details: Any) -> EvalResult:
    return EvalResult(outcome_reward=0.0, details={"reason": reason, **details})


async def evaluate_safely(evaluator: Evaluator, trajectory: Trajectory, ctx: EvalContext,
                          timeout_s: float | None = None) -> EvalResult:
    """Run an evaluator under an overall deadline; a timeout or a crash scores 0 with the reason recorded."""
    limit = timeout_s if timeout_s is not None else evaluator.spec.timeout_s * 2 + 60
    try:
        return await asyncio.wait_for(evaluator.evaluate(trajectory, ctx), limit)
    except TimeoutError:
        return zero("timeout", timeout_s=limit, evaluator=evaluator.name)
    except Exception as err:  # the session still yields its trajectory; the error is recorded, not raised
        log.warning("evaluator %s failed: %s", evaluator.name, err, exc_info=True)
        return zero("evaluator_error", error=f"{type(err).__name__}: {err}", evaluator=evaluator.name)


def apply_rewards(trajectory: Trajectory, result: EvalResult) -> None:
    """Broadcast the outcome reward to every trace, or set per-trace rewards when the evaluator gave them."""
    rewards = result.trace_rewards
    if rewards is not None and len(rewards) != len(trajectory.traces):
        raise ValueError(f"evaluator gave {len(rewards)} trace rewards for {len(trajectory.traces)} traces")
    for i, tr in enumerate(trajectory.traces):
        tr.reward = float(rewards[i]) if rewards is not None else float(result.outcome_reward)


async def acquire_runtime(ctx: EvalContext, fresh: bool) -> tuple[Runtime, bool]:
    """The runtime to evaluate in and whether it is ours to stop."""
    if not fresh and ctx.runtime is not None:
        return ctx.runtime, False
    if ctx.new_runtime is None:
        want = "a fresh runtime" if fresh else "a runtime"
        raise ValueError(f"evaluation needs {want} but the context has no new_runtime factory")
    return await ctx.new_runtime(), True
