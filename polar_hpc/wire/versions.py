"""Weight versions: one number, what the trainer counts and the per-token version column of the shards holds.

Engines name their weights with a string (SGLang's ``weight_version``; the trainer loads checkpoint ``step-N`` as
``"N"``). That name is read here only (:func:`parse_version`) and written here only (:func:`engine_name`): ``default``,
the weights an engine starts with, is 0; ``"7"`` is 7; a name that is not a step number, or a token no call
sampled, is :data:`UNKNOWN`. Everything past the engine boundary holds a :data:`WeightVersion`, so versions order
as numbers (``"10"`` after ``"9"``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, NewType

import msgspec

WeightVersion = NewType("WeightVersion", int)
"""The step number of a policy's weights: 0 the initial weights, N after the trainer's N-th update."""

PolicyVersion = Annotated[WeightVersion, msgspec.Meta(ge=0)]
"""A :data:`WeightVersion` field that crosses processes: an int >= 0 (anything else is a decode error)."""

INITIAL = WeightVersion(0)
INITIAL_VERSION = "default"
"""The version name an engine serves before the first weight update (SGLang's and the reference server's)."""
UNKNOWN = WeightVersion(-1)
"""A token whose version is not recorded, or a position that was not sampled (loss mask 0)."""


def parse_version(name: str | None) -> WeightVersion:
    """The number of an engine's version name: ``default`` is 0, ``"7"`` is 7; anything else :data:`UNKNOWN`."""
    if name == INITIAL_VERSION:
        return INITIAL
    if name is not None and name.isdigit():
        return WeightVersion(int(name))
    return UNKNOWN



def engine_name(version: int) -> str:
    """The name the engine is told to serve ``version`` as (``update_weights_from_disk``); :func:`parse_version`
    reads it back."""
    if version < 0:
        raise ValueError(f"weight version {version} has no engine name")
    return INITIAL_VERSION if version == INITIAL else str(version)


def ordered_names(names: Iterable[str]) -> list[str]:
    """Distinct engine version names in version order (numbers as numbers; names that are not versions last, by
    name)."""
    return sorted(set(names), key=lambda n: (parse_version(n) == UNKNOWN, parse_version(n), n))
