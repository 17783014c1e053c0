"""Preflight of a recipe's task set: every task's image is prepared, and its evaluator has what it grades with.

Called by ``launch.preflight`` (one function, so its other checks stay apart); each problem names the tasks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from polar_hpc.config import ConfigError, RunConfig
from polar_hpc.evaluate.swe_spec import SPEC_KEY
from polar_hpc.wire.records import Task
from polar_hpc.wire.resolved import resolve_task

SHOW = 5


def _names(ids: list[str]) -> str:
    more = f" and {len(ids) - SHOW} more" if len(ids) > SHOW else ""
    return ", ".join(ids[:SHOW]) + more


def _normal(ref: str) -> str:
    """``docker.io/library/x:latest`` form of an image reference, as podman lists it."""
    ref = ref.removeprefix("docker://")
    first, _, rest = ref.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        ref = f"docker.io/{ref if rest else 'library/' + ref}"
    return ref if ":" in ref.rsplit("/", 1)[-1] else f"{ref}:latest"


def local_images(engine: str) -> set[str] | None:
    """Every image the engine has (normalized), None when it cannot be asked."""
    binary = shutil.which(engine)
    if binary is None:
        return None
    res = subprocess.run([binary, "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True,
                         timeout=120)
    if res.returncode != 0:
        return None
    return {_normal(line.strip()) for line in res.stdout.splitlines() if line.strip()}


def _image_missing(cfg: RunConfig, task: Task, have: set[str] | None) -> bool:
    rt = resolve_task(task, cfg).runtime
    if not rt.image:
        return rt.backend in ("docker", "podman", "apptainer")
    if rt.backend in ("docker", "podman"):
        return have is not None and _normal(rt.image) not in have
    if rt.backend == "apptainer":
        if rt.image.startswith("docker://"):
            from polar_hpc.images.prepare import sif_path

            return not rt.image_cache or not sif_path(rt.image_cache, rt.image).is_file()
        return not Path(rt.image).exists()
    if rt.backend == "bwrap":
        return not Path(rt.image).is_dir()
    return False


def _evaluator_unconfigured(cfg: RunConfig, task: Task) -> bool:
    ev = resolve_task(task, cfg).evaluator
    if ev.name != "swebench":
        return False
    return SPEC_KEY not in task.metadata and not ev.command and not ev.options.get("test_command")


def task_set_problems(cfg: RunConfig) -> list[str]:
    """What keeps the recipe's tasks from running or being graded; [] when nothing (or no task file)."""
    from polar_hpc.tasks.source import iter_tasks

    problems: list[str] = []
    backend = cfg.runtime.backend
    if backend in ("docker", "podman") and shutil.which(backend) is None:
        problems.append(f"runtime.backend = {backend!r} but {backend} is not on PATH")
    try:
        tasks = list(iter_tasks(cfg))
    except ConfigError:
        return problems  # reported by the caller's own task check
    have = local_images(backend) if backend in ("docker", "podman") else None
    missing = [t.task_id for t in tasks if _image_missing(cfg, t, have)]
    if missing:
        how = {"apptainer": "runtime.image_cache with `polar-hpc images prepare RECIPE --cache DIR`",
               "bwrap": "a root filesystem folder per image"}.get(
                   backend, f"{backend} with `polar-hpc images prepare RECIPE`")
        problems.append(f"{len(missing)} task(s) have no prepared image ({_names(missing)}): prepare them into {how}")
    unconfigured = [t.task_id for t in tasks if _evaluator_unconfigured(cfg, t)]
    if unconfigured:
        problems.append(
            f"evaluator 'swebench' has nothing to grade {len(unconfigured)} task(s) with ({_names(unconfigured)}): "
            f"import them with `polar-hpc tasks import` (rows carry {SPEC_KEY}; list it in "
            "tasks.template.metadata_fields) or set evaluator.command")
    return problems
