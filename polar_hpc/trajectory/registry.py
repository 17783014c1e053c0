"""Builder registry: a strategy name (or ``module:Class``) to a configured Builder."""

from __future__ import annotations

from polar_hpc.config.run import BuilderSpec
from polar_hpc.trajectory.base import Builder
from polar_hpc.util.classes import load_class

BUILDERS: dict[str, str] = {
    "per_request": "polar_hpc.trajectory.per_request:PerRequestBuilder",
    "prefix_merging": "polar_hpc.trajectory.prefix_merging:PrefixMergingBuilder",
}


def get_builder(spec: BuilderSpec, *, end_of_turn_id: int | None = None) -> Builder:
    cls = load_class(spec.name, "builder", BUILDERS, Builder)
    builder: Builder = cls(spec, end_of_turn_id=end_of_turn_id)
    return builder
