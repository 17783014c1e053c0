"""Typed run configuration (msgspec only: importable on a login node without numpy/h5py/torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from polar_hpc.config.base import ConfigError, StrictStruct, apply_override, decode, dump_toml, to_dict
from polar_hpc.config.run import (
    AgentSpec,
    BuilderSpec,
    CoordinatorConfig,
    EvaluatorSpec,
    GatewayConfig,
    InferenceConfig,
    LaunchConfig,
    RunConfig,
    RuntimeSpec,
    ShardConfig,
    SlurmResources,
    TaskSource,
    TaskTemplate,
    TrainerConfig,
)


def load_recipe(path: str | Path, overrides: list[str] | None = None) -> RunConfig:
    """Read a recipe TOML, apply ``--set`` overrides, and decode strictly."""
    import msgspec

    from polar_hpc.config.base import read_toml

    data, applied = read_toml(path, overrides)
    cfg = decode(data, RunConfig, source=str(path), overrides=applied)
    check_required(cfg, data, str(path))
    if cfg.recipe_dir is None:
        cfg = msgspec.structs.replace(cfg, recipe_dir=str(Path(path).resolve().parent))
    return cfg


def check_required(cfg: RunConfig, data: dict[str, Any], source: str) -> None:
    """Fields whose default would be wrong for this run must be given (a resolved config.toml gives them all)."""
    raw = data.get("inference")
    inference: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if (cfg.inference.engine == "sglang" or cfg.launch.backend == "slurm") and cfg.inference.engine != "external" \
            and "model" not in inference:
        why = f"inference.engine = {cfg.inference.engine!r}" if cfg.inference.engine == "sglang" \
            else "launch.backend = 'slurm'"
        raise ConfigError(f"{source}: inference.model: {why} needs the model to serve (a model directory); "
                          f"the default {cfg.inference.model!r} is the tiny random test model")
    if cfg.launch.backend == "slurm" and "evaluator" not in data:
        raise ConfigError(f"{source}: [evaluator]: a Slurm run needs an explicit evaluator (e.g. name = 'command' "
                          "with a test command); without one every completed session gets reward 1 "
                          "(say evaluator.name = 'session_completed' if that is what you want)")


def dump_config(cfg: RunConfig) -> str:
    return dump_toml(cfg)


__all__ = [
    "AgentSpec", "BuilderSpec", "ConfigError", "CoordinatorConfig", "EvaluatorSpec", "GatewayConfig",
    "InferenceConfig", "LaunchConfig", "RunConfig", "RuntimeSpec", "ShardConfig", "SlurmResources",
    "StrictStruct", "TaskSource", "TaskTemplate", "TrainerConfig", "apply_override", "check_required", "decode",
    "dump_config",
    "load_recipe", "to_dict",
]
