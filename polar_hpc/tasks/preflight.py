"""Preflight of a recipe's task set: every task's image is prepared, and its evaluator has what it grades with.

Called by ``launch.preflight`` (one function, so its other checks stay apart); each problem names the tasks."""

from __future__ import annotations

from polar_hpc.config import ConfigError, RunConfig
from polar_hpc.evaluate.swe_spec import SPEC_KEY
from polar_hpc.runtime import BACKENDS, backend
from polar_hpc.wire.records import Task
from polar_hpc.wire.resolved import resolve_task

SHOW = 5


def _names(ids: list[str]) -> str:
    more = f" and {len(ids) - SHOW} more" if len(ids) > SHOW else ""
    return ", ".join(ids[:SHOW]) + more


def _image_missing(cfg: RunConfig, task: Task, have: set[str] | None) -> bool:
    rt = resolve_task(task, cfg).runtime
    return rt.backend in BACKENDS and backend(rt.backend).image_missing(rt, have)


def _evaluator_unconfigured(cfg: RunConfig, task: Task) -> bool:
    ev = resolve_task(task, cfg).evaluator
    if ev.name != "swebench":
        return False
    return SPEC_KEY not in task.metadata and not ev.command and not ev.options.get("test_command")


def task_set_problems(cfg: RunConfig) -> list[str]:
    """What keeps the recipe's tasks from running or being graded; [] when nothing (or no task file)."""
    from polar_hpc.tasks.source import iter_tasks

    problems: list[str] = []
    try:
        tasks = list(iter_tasks(cfg))
    except ConfigError:
        return problems  # reported by the caller's own task check
    if cfg.runtime.backend not in BACKENDS:
        return problems  # reported by launch.preflight.check_names
    chosen = backend(cfg.runtime.backend)
    have = chosen.images_here()
    missing = [t.task_id for t in tasks if _image_missing(cfg, t, have)]
    if missing:
        how = chosen.prepare_hint or f"{chosen.name} with `polar-hpc images prepare RECIPE`"
        problems.append(f"{len(missing)} task(s) have no prepared image ({_names(missing)}): prepare them into {how}")
    unconfigured = [t.task_id for t in tasks if _evaluator_unconfigured(cfg, t)]
    if unconfigured:
        problems.append(
            f"evaluator 'swebench' has nothing to grade {len(unconfigured)} task(s) with ({_names(unconfigured)}): "
            f"import them with `polar-hpc tasks import` (rows carry {SPEC_KEY}; list it in "
            "tasks.template.metadata_fields) or set evaluator.command")
    return problems
