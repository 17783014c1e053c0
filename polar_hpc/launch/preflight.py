"""Checks before anything is submitted: bad recipes and missing pieces fail here, not inside a job."""

from __future__ import annotations

import shutil

from polar_hpc.config import ConfigError, RunConfig


def preflight(cfg: RunConfig) -> None:
    problems: list[str] = []
    if cfg.launch.backend == "slurm" and shutil.which("sbatch") is None:
        problems.append("launch.backend = 'slurm' but sbatch is not on PATH (use --backend local?)")
    if cfg.runtime.backend == "bwrap" and shutil.which("bwrap") is None:
        problems.append("runtime.backend = 'bwrap' but bubblewrap (bwrap) is not installed")
    if cfg.runtime.backend == "apptainer" and shutil.which("apptainer") is None and shutil.which("singularity") is None:
        problems.append("runtime.backend = 'apptainer' but neither apptainer nor singularity is on PATH")
    if cfg.inference.engine == "external" and not cfg.inference.endpoints:
        problems.append("inference.engine = 'external' needs inference.endpoints (base URLs)")
    if cfg.inference.model.startswith("asset:"):
        from polar_hpc.assets import AssetMissing, resolve_model

        try:
            resolve_model(cfg.inference.model)
        except AssetMissing as err:
            problems.append(f"inference.model: {err}")
    try:
        from polar_hpc.coordinator.tasks import iter_tasks

        n = sum(1 for _ in iter_tasks(cfg))
    except ConfigError as err:
        problems.append(str(err))
    else:
        if n == 0 and cfg.tasks.path:
            problems.append(f"tasks.path: {cfg.tasks.path} holds no tasks")
    from polar_hpc.tasks.preflight import task_set_problems

    problems += task_set_problems(cfg)
    if problems:
        raise ConfigError("the run cannot start:\n  - " + "\n  - ".join(problems))
