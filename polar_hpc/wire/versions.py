"""Weight versions as numbers: what the per-token version column of the shards and the trainer hold.

Engines name their weights with a string (SGLang's ``weight_version``; the trainer loads checkpoint ``step-N`` as
``"N"``). Per token the shards keep the number (``Trace.response_versions``): ``default``, the weights an engine
starts with, is 0; ``"7"`` is 7; a name that is not a step number, or a token no call sampled, is ``UNKNOWN``.
"""

from __future__ import annotations

INITIAL_VERSION = "default"
"""The version name an engine serves before the first weight update (SGLang's and the reference server's)."""
UNKNOWN = -1
"""A token whose version is not recorded, or a position that was not sampled (loss mask 0)."""


def version_number(name: str | None) -> int:
    """The step number of a weight version name: ``default`` is 0, ``"7"`` is 7; anything else ``UNKNOWN``."""
    if name == INITIAL_VERSION:
        return 0
    if name is not None and name.isdigit():
        return int(name)
    return UNKNOWN
