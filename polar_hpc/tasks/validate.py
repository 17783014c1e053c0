"""Checks a task or a run before anything is submitted: registry names and value ranges.

One set of checks for every way work comes in: a recipe at ``launch`` (and ``--dry-run``, and preflight), tasks
submitted through the control plane (the coordinator and ``RunClient``) and the HTTP facade. Names are looked up
in the registries themselves (builders, evaluators, harness adapters, runtime backends, tool parsers), so a name
someone registers is accepted everywhere at once. Each problem is one line naming the field, the bad value and
what was expected.
"""

from __future__ import annotations

import typing

import msgspec

from polar_hpc.config import ConfigError, RunConfig, decode
from polar_hpc.config.run import AgentSpec, BuilderSpec, EvaluatorSpec, RuntimeSpec, ToolParser
from polar_hpc.wire.session import Task


def _runtime_problems(spec: RuntimeSpec, where: str) -> list[str]:
    from polar_hpc.runtime import BACKENDS

    if spec.backend not in BACKENDS:
        return [f"{where}runtime.backend = {spec.backend!r}: unknown runtime (known: {', '.join(BACKENDS)})"]
    return []


def _agent_problems(spec: AgentSpec, where: str) -> list[str]:
    from polar_hpc.harness import ADAPTERS

    if spec.harness not in ADAPTERS:
        return [f"{where}agent.harness = {spec.harness!r}: unknown harness (known: {', '.join(ADAPTERS)})"]
    if spec.harness == ADAPTERS["shell"].name and not spec.command:
        return [f"{where}agent.command: the shell harness needs a command, e.g. \"python agent.py {{instruction}}\""]
    return []


def _builder_problems(spec: BuilderSpec, where: str) -> list[str]:
    from polar_hpc.trajectory.registry import get_builder

    try:
        get_builder(spec)
    except (ConfigError, ValueError, TypeError) as err:
        return [f"{where}builder.name = {spec.name!r}: {err}"]
    return []


def _evaluator_problems(spec: EvaluatorSpec, where: str) -> list[str]:
    from polar_hpc.evaluate.registry import get_evaluator

    try:
        get_evaluator(spec)
    except (ConfigError, ValueError, TypeError) as err:
        return [f"{where}evaluator.name = {spec.name!r}: {err}"]
    return []


def _ranges(task: Task, where: str) -> list[str]:
    """Value ranges (``msgspec.Meta`` on the spec fields) of a task built in Python, by decoding it again."""
    problems = []
    if task.num_samples < 1:
        problems.append(f"{where}num_samples = {task.num_samples!r}: expected an integer >= 1")
    if task.timeout_s is not None and task.timeout_s <= 0:
        problems.append(f"{where}timeout_s = {task.timeout_s!r}: expected seconds > 0")
    if task.agent_timeout_s is not None and task.agent_timeout_s <= 0:
        problems.append(f"{where}agent_timeout_s = {task.agent_timeout_s!r}: expected seconds > 0")
    try:
        decode(msgspec.to_builtins(task), Task, source=where.removesuffix(": "))
    except ConfigError as err:
        problems.append(str(err))
    return problems


def task_problems(task: Task) -> list[str]:
    """Everything wrong with one submitted task (empty: it can run)."""
    where = f"task {task.task_id!r}: "
    problems = [] if task.task_id else ["task: task_id is empty"]
    problems += _ranges(task, where)
    if problems:
        return problems
    if task.runtime is not None:
        problems += _runtime_problems(task.runtime, where)
    if task.agent is not None:
        problems += _agent_problems(task.agent, where)
    if task.builder is not None:
        problems += _builder_problems(task.builder, where)
    if task.evaluator is not None:
        problems += _evaluator_problems(task.evaluator, where)
    return problems


def config_problems(cfg: RunConfig) -> list[str]:
    """The recipe's own names (the defaults every task of the run inherits)."""
    problems = _runtime_problems(cfg.runtime, "")
    problems += _agent_problems(cfg.agent, "")
    problems += _builder_problems(cfg.builder, "")
    problems += _evaluator_problems(cfg.evaluator, "")
    parsers = typing.get_args(ToolParser)
    if cfg.inference.tool_parser not in parsers:
        problems.append(f"inference.tool_parser = {cfg.inference.tool_parser!r}: unknown tool parser "
                        f"(known: {', '.join(parsers)})")
    return problems
