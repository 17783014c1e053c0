"""Checks before anything is submitted: bad recipes and missing pieces fail here, not inside a job.

Each check is its own function ``cfg -> list of problems`` (one line each, naming the field, the value and the
fix); :func:`preflight` runs them all and raises one :class:`ConfigError` listing every problem.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

from polar_hpc.config import ConfigError, RunConfig
from polar_hpc.tasks.preflight import task_set_problems


def check_names(cfg: RunConfig) -> list[str]:
    """Builder, evaluator, harness, runtime and tool-parser names, looked up in their registries."""
    from polar_hpc.tasks.validate import config_problems

    return config_problems(cfg)


def check_scheduler(cfg: RunConfig) -> list[str]:
    if cfg.launch.backend == "slurm" and shutil.which("sbatch") is None:
        return ["launch.backend = 'slurm' but sbatch is not on PATH (use --backend local?)"]
    return []


def check_sandbox(cfg: RunConfig) -> list[str]:
    """The recipe's runtime backend can run on this node (``Backend.missing``)."""
    from polar_hpc.runtime import BACKENDS, backend

    if cfg.runtime.backend not in BACKENDS:
        return []  # check_names reports it
    why = backend(cfg.runtime.backend).missing()
    return [why] if why else []


def check_inference_env(cfg: RunConfig) -> list[str]:
    """``inference.python`` / ``inference.container``: the server's own environment exists."""
    import os

    inf = cfg.inference
    if inf.python and inf.container:
        return [f"inference.python = {inf.python!r} and inference.container = {inf.container!r}: give one of them"]
    if inf.python and not (os.path.isfile(inf.python) and os.access(inf.python, os.X_OK)):
        return [f"inference.python = {inf.python!r}: not an executable file (the interpreter of the environment "
                "SGLang is installed in, e.g. /path/to/sglang-venv/bin/python)"]
    if inf.container and "://" not in inf.container and not os.path.isfile(inf.container):
        return [f"inference.container = {inf.container!r}: no such image file (a SIF path or a docker:// URI)"]
    return []


def check_inference(cfg: RunConfig) -> list[str]:
    if cfg.inference.engine == "external":
        return [] if cfg.inference.endpoints else [
            "inference.engine = 'external' needs inference.endpoints (base URLs)"]
    if cfg.inference.model.startswith("asset:"):
        from polar_hpc.assets import AssetMissing, resolve_model

        try:
            resolve_model(cfg.inference.model)
        except AssetMissing as err:
            return [f"inference.model = {cfg.inference.model!r}: {err}"]
    return []


def check_capacity(cfg: RunConfig) -> list[str]:
    """Local backend: this machine holds the gateway pools (fds, processes, memory; ``launch/capacity.py``)."""
    if cfg.launch.backend != "local":
        return []
    from polar_hpc.launch.capacity import machine_limits, pool_problems

    return pool_problems(cfg, machine_limits())


def check_tasks(cfg: RunConfig) -> list[str]:
    """The task file parses and every row fills the template (the tasks inherit the recipe's checked specs)."""
    from polar_hpc.tasks.source import iter_tasks

    try:
        n = sum(1 for _ in iter_tasks(cfg))
    except ConfigError as err:
        return [str(err)]
    if n == 0 and cfg.tasks.path:
        return [f"tasks.path = {cfg.tasks.path!r}: the file holds no tasks"]
    return []


CHECKS: list[Callable[[RunConfig], list[str]]] = [check_names, check_scheduler, check_sandbox, check_capacity,
                                                  check_inference, check_inference_env, check_tasks,
                                                  task_set_problems]


def preflight_problems(cfg: RunConfig) -> list[str]:
    return [p for check in CHECKS for p in check(cfg)]


def preflight(cfg: RunConfig) -> None:
    problems = preflight_problems(cfg)
    if problems:
        raise ConfigError("the run cannot start:\n  - " + "\n  - ".join(problems))
