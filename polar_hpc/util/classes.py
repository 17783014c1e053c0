"""A registered name or a ``module:Class`` path from a recipe, resolved to a class (builders, evaluators)."""

from __future__ import annotations

import importlib

from polar_hpc.config.base import ConfigError


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
