"""Evaluator contract: ``async evaluate(trajectory, ctx) -> EvalResult``, and how rewards reach the traces."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from polar_hpc.config.base import ConfigError
from polar_hpc.config.run import EvaluatorSpec
from polar_hpc.log import get_logger
from polar_hpc.wire.session import Session, Task
from polar_hpc.wire.traces import EvalResult, Trajectory

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


class NoOptions(msgspec.Struct):
    """The options of an evaluator that takes none (any given are ignored)."""


class Evaluator(ABC):
    """One evaluator's every fact: its grading, its typed options, what preflight checks and whether it only checks
    that a session finished. Registered by name in ``evaluate.registry.EVALUATORS``."""

    name: ClassVar[str] = ""
    Options: ClassVar[type[msgspec.Struct]] = NoOptions
    """``evaluator.options`` typed: decoded when the evaluator is made (a wrong value fails preflight's name check);
    keys it does not know are ignored."""
    format_only: ClassVar[bool] = False
    """It rewards any finished session, whatever the task asked: ``train grpo`` refuses it (nothing to learn)."""

    def __init__(self, spec: EvaluatorSpec | None = None) -> None:
        self.spec = spec or EvaluatorSpec(name=self.name)
        try:
            self.options: msgspec.Struct = msgspec.convert(self.spec.options, type(self).Options, strict=False)
        except msgspec.ValidationError as err:
            raise ConfigError(f"evaluator.options: {err}") from None

    def cannot_grade(self, task: Task) -> str | None:
        """What this evaluator lacks to grade ``task``, as the fix (preflight names the tasks); None: nothing."""
        return None

    @abstractmethod
    async def evaluate(self, trajectory: Trajectory, ctx: EvalContext) -> EvalResult: ...


EVAL_SLACK_S = 120.0
EVALUATION_ERROR = "evaluation_error"
"""``details["reason"]`` (and the trace filter reason) of an evaluation that failed for infrastructure reasons."""


def fresh_runtime_budget_s(spec: EvaluatorSpec) -> float:
    """Start + prepare of a fresh evaluation runtime: its own budget, never the (maybe spent) session budget."""
    return spec.timeout_s + EVAL_SLACK_S


def evaluation_timeout_s(spec: EvaluatorSpec) -> float:
    """The one bound on a whole evaluation: the evaluated command (``timeout_s``) plus a fresh runtime."""
    return spec.timeout_s + fresh_runtime_budget_s(spec)


def zero(reason: str, **details: Any) -> EvalResult:
    return EvalResult(outcome_reward=0.0, details={"reason": reason, **details})


def evaluation_failed(result: EvalResult | None) -> bool:
    """True for an infrastructure failure (runtime start/prepare, evaluator crash, overall timeout): no score."""
    return result is not None and result.details.get("reason") == EVALUATION_ERROR


async def evaluate_safely(evaluator: Evaluator, trajectory: Trajectory, ctx: EvalContext,
                          timeout_s: float | None = None) -> EvalResult:
    """Run an evaluator under :func:`evaluation_timeout_s`; never raises.

    A genuine result (tests failed, the evaluated command timed out) is returned as the evaluator gave it. A crash
    or the overall deadline (a runtime that did not start or prepare in time) is an infrastructure failure, not a
    score: it comes back as reward 0 with reason ``evaluation_error`` (:func:`evaluation_failed`), which
    :func:`apply_rewards` marks as not trainable and the gateway records as an ERROR session.
    """
    limit = timeout_s if timeout_s is not None else evaluation_timeout_s(evaluator.spec)
    try:
        return await asyncio.wait_for(evaluator.evaluate(trajectory, ctx), limit)
    except TimeoutError:
        log.warning("evaluator %s: no result within %.0fs", evaluator.name, limit)
        return zero(EVALUATION_ERROR, error=f"evaluation timed out after {limit:.0f}s", timeout_s=limit,
                    evaluator=evaluator.name)
    except Exception as err:  # the session still yields its trajectory; the error is recorded, not raised
        log.warning("evaluator %s failed: %s", evaluator.name, err, exc_info=True)
        return zero(EVALUATION_ERROR, error=f"{type(err).__name__}: {err}", evaluator=evaluator.name)


def mark_not_trainable(trajectory: Trajectory, reason: str) -> None:
    """Add a training filter reason to every trace (see ``trajectory.base.mark_training_filter``)."""
    for tr in trajectory.traces:
        tr.mark_not_trainable(reason)


def failure_text(result: EvalResult) -> str:
    """``Trajectory.error`` of a session whose evaluation failed (:func:`evaluation_failed`)."""
    return f"evaluation failed: {result.details.get('error', 'unknown error')}"


def evaluation_crashed(trajectory: Trajectory, err: BaseException) -> str:
    """An evaluation call that raised instead of returning a result: every trace is marked not trainable
    (``evaluation_error``, as for a failed result); returns the ``Trajectory.error`` text."""
    mark_not_trainable(trajectory, EVALUATION_ERROR)
    return f"evaluation failed: {err!r}"


def apply_rewards(trajectory: Trajectory, result: EvalResult) -> None:
    """Broadcast the outcome reward to every trace, or set per-trace rewards when the evaluator gave them.

    A failed evaluation (:func:`evaluation_failed`) gives no score to learn from: every trace is marked not
    trainable with the filter reason ``evaluation_error``.
    """
    rewards = result.trace_rewards
    if rewards is not None and len(rewards) != len(trajectory.traces):
        raise ValueError(f"evaluator gave {len(rewards)} trace rewards for {len(trajectory.traces)} traces")
    for i, tr in enumerate(trajectory.traces):
        tr.reward = float(rewards[i]) if rewards is not None else float(result.outcome_reward)
    if evaluation_failed(result):
        mark_not_trainable(trajectory, EVALUATION_ERROR)


async def acquire_runtime(ctx: EvalContext, fresh: bool) -> tuple[Runtime, bool]:
    """The runtime to evaluate in and whether it is ours to stop."""
    if not fresh and ctx.runtime is not None:
        return ctx.runtime, False
    if ctx.new_runtime is None:
        want = "a fresh runtime" if fresh else "a runtime"
        raise ValueError(f"evaluation needs {want} but the context has no new_runtime factory")
    return await ctx.new_runtime(), True
