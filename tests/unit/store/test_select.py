"""One filter: ``ShardReader.traces`` and the trainer's ``build_index`` keep the same traces for every condition."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.config.run import ShardConfig
from polar_hpc.store.index import build_index
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.summary import summarize
from polar_hpc.store.writer import ShardWriter
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.traces import TraceStatus

SELECTS = [
    TraceSelect(),
    TraceSelect(status=(TraceStatus.COMPLETED,), max_reward=0.5),
    TraceSelect(harness=("pi",), min_policy_version=2),
    TraceSelect(repos=frozenset({"octo/widgets"})),
    TraceSelect(metadata={"repo": "octo/widgets"}, min_reward=1.0),
    TraceSelect(trainable_only=True),
    TraceSelect(policies=("oracle",)),
    TraceSelect(policies=("sample",), trainable_only=True, task_ids=frozenset({"t-1", "t-2", "t-3", "t-4"})),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import numpy as np

    from tests.fixtures.trajectories import make_session_result

    rng = np.random.default_rng(3)
    w = ShardWriter(RunDir(tmp_path_factory.mktemp("run")).shards, 0, ShardConfig(max_sessions=5), {"test": "select"})
    for i in range(16):
        r = make_session_result(rng, task_id=f"t-{i}", sample_index=0, traces=2, turns=1,
                                harness=("pi", "codex")[i % 2])
        r.policy_version = i % 4
        if i % 3 == 0:
            r.metadata["repo"] = "octo/widgets"
        if i % 4 == 1:
            r.trajectory.traces[0].mark_not_trainable("unparsed_tool_call")
        if i % 5 == 2:
            r.trajectory.traces[1].policy = "oracle"
        w.add(r)
    w.close()
    return w.shards_dir


@pytest.mark.parametrize("select", SELECTS, ids=lambda s: s.describe())
def test_reader_and_index_keep_the_same_traces(run: Path, select: TraceSelect) -> None:
    views = [(v.key, v.trace_index) for v in ShardReader(run).traces(select, blobs=False)]
    ix = build_index(run, select, dedup="session")
    assert views == list(zip(ix.key, ix.trace_in_session.tolist(), strict=True))
    assert views  # every condition has matches in the fixture


def test_whole_session_readers_refuse_trace_conditions(run: Path) -> None:
    with pytest.raises(ValueError, match=r"results\(\) reads whole sessions; the filter trainable_only=True"):
        next(ShardReader(run).results(TraceSelect(trainable_only=True)))
    with pytest.raises(ValueError, match="a summary counts whole sessions"):
        summarize(ShardReader(run), TraceSelect(policies=("oracle",)))
    assert summarize(ShardReader(run), TraceSelect(repos=frozenset({"octo/widgets"}))).sessions == 6
