"""What a component is waiting for, published in the run dir so ``polar-hpc status`` can show it.

``waits/<component>.json`` (atomic, like endpoints) while the wait lasts; removed when it ends.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from polar_hpc.util.fs import write_atomic
from polar_hpc.wire.rundir import WAITS


class WaitRecord(msgspec.Struct, kw_only=True):
    component: str
    """Who waits: ``gateway-0``."""
    waiting_for: list[str]
    """Endpoint names: ``inference-0``, ``coordinator``."""
    detail: str
    """One line, as in the component's log: ``waiting for inference-0: job 123 PENDING (Resources), 4 min``."""
    since: float
    updated: float


def wait_path(run_dir: str | os.PathLike[str], component: str) -> Path:
    return Path(run_dir) / WAITS / f"{component}.json"


def write_wait(run_dir: str | os.PathLike[str], record: WaitRecord) -> None:
    write_atomic(wait_path(run_dir, record.component), msgspec.json.encode(record))


def clear_wait(run_dir: str | os.PathLike[str], component: str) -> None:
    wait_path(run_dir, component).unlink(missing_ok=True)


def read_waits(run_dir: str | os.PathLike[str]) -> dict[str, WaitRecord]:
    folder = Path(run_dir) / WAITS
    out: dict[str, WaitRecord] = {}
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            rec = msgspec.json.decode(p.read_bytes(), type=WaitRecord)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        out[rec.component] = rec
    return out
