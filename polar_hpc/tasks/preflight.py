"""Preflight of a recipe's task set: every task's image is prepared, and its evaluator has what it grades with.

Called by ``launch.preflight`` (one function, so its other checks stay apart); each problem names the tasks."""

from __future__ import annotations

import msgspec

from polar_hpc.config import ConfigError, RunConfig
from polar_hpc.evaluate.base import Evaluator
from polar_hpc.runtime import BACKENDS, backend
from polar_hpc.wire.resolved import resolve_task
from polar_hpc.wire.session import Task

SHOW = 5


def _names(ids: list[str]) -> str:
    more = f" and {len(ids) - SHOW} more" if len(ids) > SHOW else ""
    return ", ".join(ids[:SHOW]) + more


def _image_missing(cfg: RunConfig, task: Task, have: set[str] | None) -> bool:
    rt = resolve_task(task, cfg).runtime
    return rt.backend in BACKENDS and backend(rt.backend).image_missing(rt, have)


def _cannot_grade(cfg: RunConfig, tasks: list[Task]) -> dict[tuple[str, str], list[str]]:
    """(evaluator name, what it lacks) -> the tasks it cannot grade (``Evaluator.cannot_grade``)."""
    from polar_hpc.evaluate.registry import get_evaluator

    made: dict[bytes, Evaluator | None] = {}
    out: dict[tuple[str, str], list[str]] = {}
    for task in tasks:
        spec = resolve_task(task, cfg).evaluator
        key = msgspec.json.encode(spec)
        if key not in made:
            try:
                made[key] = get_evaluator(spec)
            except (ConfigError, ValueError, TypeError):
                made[key] = None  # reported by launch.preflight.check_names
        ev = made[key]
        why = ev.cannot_grade(task) if ev is not None else None
        if why is not None:
            out.setdefault((spec.name, why), []).append(task.task_id)
    return out


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
    for (name, why), ids in _cannot_grade(cfg, tasks).items():
        problems.append(f"evaluator {name!r} has nothing to grade {len(ids)} task(s) with ({_names(ids)}): {why}")
    return problems
