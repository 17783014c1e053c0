"""Write SessionResults into a run dir's shards (real ShardWriter) for the train tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from polar_hpc.config.run import ShardConfig
from polar_hpc.store.writer import ShardWriter
from polar_hpc.wire.records import SessionResult
from polar_hpc.wire.rundir import RunDir


def write_run(run_dir: Path, results: Sequence[SessionResult], *, per_shard: int = 4, rank: int = 0) -> Path:
    shards = RunDir(run_dir).shards
    shards.mkdir(parents=True, exist_ok=True)
    with ShardWriter(shards, rank, ShardConfig(max_sessions=per_shard), {"test": "train"}) as w:
        for r in results:
            w.add(r)
    return run_dir
