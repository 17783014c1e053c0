"""The set of committed session keys of a run, from the shards' session tables only (no token data).

Per shard it checks what resume relies on: the file opens (HDF5 detects truncation), the schema
attributes, and the key column's offsets. ``ShardReader``/``validate`` check the rest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import msgspec

from polar_hpc.log import get_logger
from polar_hpc.store.shardfile import ShardError, read_keys, resolve_shards

log = get_logger("store")


class ResumeIndex(msgspec.Struct, kw_only=True):
    keys: set[str]
    outcomes: dict[str, tuple[int, float]] = msgspec.field(default_factory=dict)
    """Key -> (``TraceStatus`` value, reward) of each committed session (the first shard's, for a duplicate)."""
    problems: list[str]
    """``"<file>: <what is wrong>"`` per shard skipped (its sessions count as not committed)."""
    shards: int
    """Shards read."""
    duplicates: int = 0
    """Sessions found in more than one shard (counted once in ``keys``)."""


def resume_index(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> ResumeIndex:
    files, problems = resolve_shards(paths)
    keys: set[str] = set()
    outcomes: dict[str, tuple[int, float]] = {}
    shards = duplicates = 0
    for path in files:
        found: list[tuple[int, float]] = []
        try:
            ks = read_keys(path, found)
        except ShardError as err:
            problems.append(str(err))
            continue
        before = len(keys)
        keys.update(ks)
        duplicates += len(ks) - (len(keys) - before)
        shards += 1
        for k, o in zip(ks, found, strict=True):
            outcomes.setdefault(k, o)
    for p in problems:
        log.warning("resume index skips shard: %s", p)
    return ResumeIndex(keys=keys, outcomes=outcomes, problems=problems, shards=shards, duplicates=duplicates)
