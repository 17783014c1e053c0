"""Builder registry: a strategy name (or ``module:Class``) to a configured Builder."""

from __future__ import annotations

import importlib

from polar_hpc.config.base import ConfigError
from polar_hpc.config.run import BuilderSpec
from polar_hpc.trajectory.base import Builder

BUILDERS: dict[str, str] = {
    "per_request": "polar_hpc.trajectory.per_request:PerRequestBuilder",
    "prefix_merging": "polar_hpc.trajectory.prefix_merging:PrefixMergingBuilder",
}


def load_class(path: str, kind: str, known: dict[str, str], base: type) -> type:
    """Resolve a registered name or a ``module:Class`` path to a subclass of ``base``."""
    target = known.get(path, path)
    if ":" not in target:
        raise ConfigError(f"unknown {kind} {path!r}: known {kind}s are {', '.join(sorted(known))} "
                          "(or give a 'module:Class' path)")
    module_name, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"{kind} {path!r}: cannot load {target!r}: {err}") from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ConfigError(f"{kind} {path!r}: {target!r} is not a subclass of {base.__module__}.{base.__name__}")
    return cls


def get_builder(spec: BuilderSpec, *, end_of_turn_id: int | None = None) -> Builder:
    cls = load_class(spec.name, "builder", BUILDERS, Builder)
    builder: Builder = cls(spec, end_of_turn_id=end_of_turn_id)
    return builder
