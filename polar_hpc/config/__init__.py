"""Typed run configuration (msgspec only: importable on a login node without numpy/h5py/torch)."""

from __future__ import annotations

from pathlib import Path

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

    from polar_hpc.config.base import load_toml

    cfg = load_toml(path, RunConfig, overrides)
    if cfg.recipe_dir is None:
        cfg = msgspec.structs.replace(cfg, recipe_dir=str(Path(path).resolve().parent))
    return cfg


def dump_config(cfg: RunConfig) -> str:
    return dump_toml(cfg)


__all__ = [
    "AgentSpec", "BuilderSpec", "ConfigError", "CoordinatorConfig", "EvaluatorSpec", "GatewayConfig",
    "InferenceConfig", "LaunchConfig", "RunConfig", "RuntimeSpec", "ShardConfig", "SlurmResources",
    "StrictStruct", "TaskSource", "TaskTemplate", "TrainerConfig", "apply_override", "decode", "dump_config",
    "load_recipe", "to_dict",
]
