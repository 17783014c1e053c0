from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from polar_hpc.config.run import ShardConfig
from polar_hpc.store import schema as S
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.resume import resume_index
from polar_hpc.store.schema import READABLE_VERSIONS, offsets_name
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.summary import format_summary, summarize
from polar_hpc.store.writer import ShardWriter
from polar_hpc.wire.codec import to_msgpack
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus


def _write(shards: Path, rank: int, results: list[SessionResult]) -> Path:
    w = ShardWriter(shards, rank, ShardConfig(), {"test": "reader"})
    for r in results:
        w.add(r)
    path = w.close()
    assert path is not None
    return path


def test_truncated_shard_is_reported_and_skipped(tmp_path: Path, session_result_factory: Any) -> None:
    shards = tmp_path / "shards"
    good = [session_result_factory() for _ in range(3)]
    _write(shards, 0, good)
    bad = _write(shards, 1, [session_result_factory(turns=8) for _ in range(3)])
    size = bad.stat().st_size
    with open(bad, "r+b") as f:
        f.truncate(size // 2)
    reader = ShardReader(tmp_path)  # run dir -> run_dir/shards
    back = list(reader.results())
    assert [to_msgpack(r) for r in back] == [to_msgpack(r) for r in good]
    assert len(reader.problems) == 1 and reader.problems[0].startswith(f"{bad}: ")
    assert bad.exists() and bad.stat().st_size == size // 2
    idx = resume_index(tmp_path)
    assert idx.keys == {r.key for r in good} and idx.shards == 1
    assert len(idx.problems) == 1 and str(bad) in idx.problems[0]


def test_wrong_schema_and_foreign_files_are_reported(tmp_path: Path, session_result_factory: Any) -> None:
    good = _write(tmp_path, 0, [session_result_factory()])
    old = tmp_path / "rank-00001-000000.h5"
    shutil.copy(good, old)
    with h5py.File(old, "r+") as f:
        f.attrs[S.ATTR_SCHEMA_VERSION] = 99
    (tmp_path / "rank-00002-000000.h5").write_bytes(b"not hdf5 at all")
    gutted = tmp_path / "rank-00003-000000.h5"
    shutil.copy(good, gutted)
    with h5py.File(gutted, "r+") as f:
        del f[S.LOSS_MASK]
    (tmp_path / "rank-00004-000000.h5.tmp").write_bytes(b"uncommitted")
    reader = ShardReader(tmp_path)
    assert reader.shards == [good]
    problems = reader.problems
    assert len(problems) == 3
    assert f"schema_version: expected one of {list(READABLE_VERSIONS)}, found 99" in problems[0]
    assert problems[1].startswith(f"{tmp_path / 'rank-00002-000000.h5'}: cannot open as HDF5")
    assert f"missing datasets: {S.LOSS_MASK}" in problems[2]
    assert len(list(reader.results())) == 1


def test_version_1_shards_still_read_and_validate(tmp_path: Path, session_result_factory: Any) -> None:
    """Schema 2 added ``traces/policy``; a version-1 shard (no such column) reads with every trace ``sample``."""
    from polar_hpc.store.validate import validate_paths

    results = [session_result_factory(), session_result_factory()]
    for tr in results[0].trajectory.traces:
        tr.policy = "oracle"
    new = _write(tmp_path / "new", 0, results)
    views = list(ShardReader(new).traces())
    assert {v.policy for v in views} == {"oracle", "sample"}
    assert [t.policy for r in ShardReader(new).results() for t in r.trajectory.traces] == \
        [t.policy for r in results for t in r.trajectory.traces]
    old = tmp_path / "old" / "rank-00000-000000.h5"
    old.parent.mkdir()
    shutil.copy(new, old)
    with h5py.File(old, "r+") as f:
        f.attrs[S.ATTR_SCHEMA_VERSION] = 1
        del f[S.POLICY], f[offsets_name(S.POLICY)]
    reader = ShardReader(old)
    assert not reader.problems and {v.policy for v in reader.traces()} == {"sample"}
    assert validate_paths([old]) == (1, [])
    with h5py.File(new, "r+") as f:
        data = f[S.POLICY][...]
        data[:6] = np.frombuffer(b"oracul", dtype=np.uint8)
        f[S.POLICY][...] = data
    n, bad = validate_paths([new])
    assert n == 1 and len(bad) == 1 and f"{S.POLICY} 'oracul' is not one of sample, oracle" in str(bad[0])


def test_explicit_tmp_and_missing_paths(tmp_path: Path) -> None:
    tmp = tmp_path / "rank-00000-000000.h5.tmp"
    tmp.write_bytes(b"x")
    reader = ShardReader([tmp, tmp_path / "nope"])
    assert reader.shards == []
    assert reader.problems == [
        f"{tmp}: not a committed shard (expected a *.h5 file)",
        f"{tmp_path / 'nope'}: no such file or directory",
    ]


def test_duplicate_session_is_read_once(tmp_path: Path, session_result_factory: Any) -> None:
    a, b, c = (session_result_factory() for _ in range(3))
    retry = session_result_factory(task_id=a.task_id, sample_index=a.sample_index, attempt=1)
    first = _write(tmp_path, 0, [a, b])
    second = _write(tmp_path, 1, [retry, c])
    reader = ShardReader(tmp_path)
    back = list(reader.results())
    assert [to_msgpack(r) for r in back] == [to_msgpack(r) for r in (a, b, c)]
    assert [(d.key, d.kept, d.skipped) for d in reader.duplicates] == [(a.key, str(first), str(second))]
    assert sum(1 for t in reader.traces() if t.key == a.key) == len(a.trajectory.traces)
    idx = resume_index(tmp_path)
    assert idx.keys == {a.key, b.key, c.key} and idx.duplicates == 1
    assert idx.outcomes[a.key] == (int(a.trajectory.status), a.reward), "the copy read (the first) gives the outcome"


def test_runs_read_together_keep_each_its_sessions(tmp_path: Path, session_result_factory: Any) -> None:
    """The same task keys in two runs are two runs' sessions, not duplicates; within a run a key is read once."""
    rs = [session_result_factory(task_id=f"t{i}", sample_index=0) for i in range(3)]
    _write(tmp_path / "run-a" / "shards", 0, rs)
    _write(tmp_path / "run-b" / "shards", 0, rs[:2])
    _write(tmp_path / "run-b" / "shards", 1, rs[2:] + rs[:1])  # t0 again within run b: a duplicate
    reader = ShardReader([tmp_path / "run-a", tmp_path / "run-b"])
    keys = [r.key for r in reader.results()]
    assert sorted(keys) == sorted([r.key for r in rs] * 2)
    assert [d.key for d in reader.duplicates] == [rs[0].key]
    assert reader.runs == {str(tmp_path / "run-a" / "shards"): 3, str(tmp_path / "run-b" / "shards"): 3}
    text = format_summary(summarize(reader))
    assert "sessions   6  (1 duplicates skipped)" in text and "runs       2: " in text


def test_filters(tmp_path: Path, session_result_factory: Any) -> None:
    rs = [
        session_result_factory(status=TraceStatus.COMPLETED, harness="codex", reward=1.0),
        session_result_factory(status=TraceStatus.TIMEOUT, harness="codex", reward=0.0),
        session_result_factory(status=TraceStatus.COMPLETED, harness="pi", reward=0.5),
        session_result_factory(status=TraceStatus.ERROR, harness="pi", reward=1.0),
    ]
    _write(tmp_path, 0, rs[:2])
    _write(tmp_path, 1, rs[2:])
    reader = ShardReader(tmp_path)

    def keys(**kw: Any) -> list[str]:
        return [r.key for r in reader.results(TraceSelect(**kw))]

    assert keys(status=(TraceStatus.COMPLETED,)) == [rs[0].key, rs[2].key]
    assert keys(min_reward=0.5) == [rs[0].key, rs[2].key, rs[3].key]
    assert keys(harness=("pi",)) == [rs[2].key, rs[3].key]
    assert keys(task_ids=frozenset({rs[1].task_id, rs[3].task_id})) == [rs[1].key, rs[3].key]
    assert keys(harness=("codex",), min_reward=0.5) == [rs[0].key]
    assert keys(harness=("nobody",)) == []


def test_trace_views_slice_whole_columns(tmp_path: Path, session_result_factory: Any) -> None:
    rs = [session_result_factory(traces=3) for _ in range(2)]
    _write(tmp_path, 0, rs)
    views = list(ShardReader(tmp_path).traces())
    assert [(v.key, v.trace_index) for v in views] == [(r.key, i) for r in rs for i in range(3)]
    assert views[1].prompt_ids.base is not None  # a view, not a copy
    np.testing.assert_array_equal(views[4].response_ids, rs[1].trajectory.traces[1].response_ids)
    assert views[4].decode().response_messages == rs[1].trajectory.traces[1].response_messages
    assert views[4].status == rs[1].trajectory.status and views[4].session_reward == rs[1].reward
