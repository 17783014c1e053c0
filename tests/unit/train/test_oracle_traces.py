"""Oracle traces (forced tokens) in the trainer's readers: RL leaves them out unless asked, SFT export keeps them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from polar_hpc.config.run import ShardConfig
from polar_hpc.export.sft import export_sft
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.writer import ShardWriter
from polar_hpc.train.async_client import Group, group_samples
from polar_hpc.train.reader import ReaderConfig, TraceReader
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir


def _run(tmp_path: Path, factory: Any) -> tuple[Path, list[SessionResult]]:
    results = [factory(traces=2) for _ in range(4)]
    for r in results[:2]:
        for tr in r.trajectory.traces:
            tr.policy = "oracle"
    run = tmp_path / "run"
    w = ShardWriter(RunDir(run).shards, 0, ShardConfig(), {"test": "oracle"})
    for r in results:
        w.add(r)
    w.close()
    return run, results


def _keys(reader: TraceReader) -> set[str]:
    return {k for b in reader.batches() for k in b.keys}


def test_rl_reader_leaves_oracle_traces_out_unless_asked(tmp_path: Path, session_result_factory: Any) -> None:
    run, results = _run(tmp_path, session_result_factory)
    sampled = {r.key for r in results[2:]}
    assert len(TraceReader([run])) == 4 and _keys(TraceReader([run])) == sampled
    both = TraceReader([run], config=ReaderConfig(include_oracle=True))
    assert len(both) == 8 and _keys(both) == {r.key for r in results}
    only = TraceReader([run], TraceSelect(policies=("oracle",)))
    assert _keys(only) == {r.key for r in results[:2]}


def test_sft_export_keeps_oracle_traces(tmp_path: Path, session_result_factory: Any) -> None:
    run, _ = _run(tmp_path, session_result_factory)
    manifest = export_sft([run], tmp_path / "sft", test_fraction=0.0)
    assert sum(manifest.traces.values()) == 8
    import json

    rows = [json.loads(line) for f in manifest.files["chat"]["train"]
            for line in (tmp_path / "sft" / f).read_text().splitlines()]
    assert sorted(r["policy"] for r in rows) == ["oracle"] * 4 + ["sample"] * 4  # gold demonstrations marked


def test_async_groups_leave_oracle_traces_out(session_result_factory: Any) -> None:
    results = [session_result_factory(traces=2) for _ in range(2)]
    for tr in results[0].trajectory.traces:
        tr.policy = "oracle"
    group = Group(group_id="g", base_task_id="t", policy_version=0, rollout_step=0, num_samples=2, results=results)
    assert len(group_samples(group)) == 2
    assert len(group_samples(group, include_oracle=True)) == 4
