"""A task whose every spec is concrete: what a gateway rank accepts a session as, and all its stages receive.

A submitted :class:`~polar_hpc.wire.session.Task` may leave ``runtime``, ``agent``, ``builder``, ``evaluator`` and
``timeout_s`` unset (the recipe's apply). :func:`resolve_task` is the one place they are filled, so no later code
can fall back to a different default; the resolved types say so to mypy (their specs are not optional).
"""

from __future__ import annotations

from polar_hpc.config.run import AgentSpec, BuilderSpec, EvaluatorSpec, RunConfig, RuntimeSpec
from polar_hpc.wire.session import Session, Task


class ResolvedTask(Task, kw_only=True):
    runtime: RuntimeSpec
    agent: AgentSpec
    builder: BuilderSpec
    evaluator: EvaluatorSpec
    timeout_s: float
    """The session budget: the task's own, else ``gateway.session_timeout_s``."""


class ResolvedSession(Session, kw_only=True):
    task: ResolvedTask


def resolve_task(task: Task, config: RunConfig) -> ResolvedTask:
    """``task`` with its unset specs taken from ``config`` (the run's recipe)."""
    if isinstance(task, ResolvedTask):
        return task
    fields = {f: getattr(task, f) for f in task.__struct_fields__}
    fields.update(
        runtime=task.runtime or config.runtime,
        agent=task.agent or config.agent,
        builder=task.builder or config.builder,
        evaluator=task.evaluator or config.evaluator,
        timeout_s=task.timeout_s if task.timeout_s is not None else config.gateway.session_timeout_s,
    )
    return ResolvedTask(**fields)


def resolve_session(session: Session, config: RunConfig) -> ResolvedSession:
    if isinstance(session, ResolvedSession):
        return session
    fields = {f: getattr(session, f) for f in session.__struct_fields__}
    fields["task"] = resolve_task(session.task, config)
    return ResolvedSession(**fields)
