"""HDF5 shard store: the run's durable record (layout in ``schema``).

Names are imported lazily so ``polar_hpc.cli.shards`` stays light (no numpy/h5py at import).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ShardWriter": "polar_hpc.store.writer",
    "install_sigterm_commit": "polar_hpc.store.writer",
    "ShardReader": "polar_hpc.store.reader",
    "TraceSelect": "polar_hpc.store.select",
    "TraceView": "polar_hpc.store.reader",
    "ResumeIndex": "polar_hpc.store.resume",
    "resume_index": "polar_hpc.store.resume",
    "validate_paths": "polar_hpc.store.validate",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'polar_hpc.store' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
