"""Schema 4 (``tokens/response_versions``), 3 (``traces/trainable``, ``traces/filter``) and the shards older code
wrote, read the same.

The pinned shards in tests/fixtures/shards/v1, v2 and v3 were written by the code of those schema versions
(``make_old_shard.py`` says how); this file is the one place the on-disk dataset names are spelled out.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import h5py
import pytest

from polar_hpc.cli.entry import main
from polar_hpc.config.run import ShardConfig
from polar_hpc.store.encode import encode_session
from polar_hpc.store.index import build_index
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.schema import ATTR_SCHEMA_VERSION, SCHEMA_VERSION, dataset_names
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.validate import validate_paths
from polar_hpc.store.writer import ShardWriter
from polar_hpc.wire.results import SessionResult

FIXTURES = Path(__file__).parents[2] / "fixtures" / "shards"

LAYOUT_V3 = [
    "tokens/prompt_ids", "tokens/response_ids", "tokens/loss_mask", "tokens/response_logprobs",
    "traces/prompt_offsets", "traces/response_offsets", "traces/session", "traces/reward",
    "traces/finish_reason", "traces/finish_reason_offsets", "traces/policy", "traces/policy_offsets",
    "traces/trainable", "traces/filter", "traces/filter_offsets", "traces/blob", "traces/blob_offsets",
    "sessions/key", "sessions/key_offsets", "sessions/task_id", "sessions/task_id_offsets",
    "sessions/sample_index", "sessions/attempt", "sessions/status", "sessions/reward", "sessions/duration_s",
    "sessions/harness", "sessions/harness_offsets", "sessions/model", "sessions/model_offsets",
    "sessions/policy_version", "sessions/gateway_rank", "sessions/trace_offsets", "sessions/blob",
    "sessions/blob_offsets",
]
LAYOUT_V4 = [*LAYOUT_V3[:4], "tokens/response_versions", "tokens/response_top_ids", "tokens/response_top_logprobs",
             *LAYOUT_V3[4:]]
NEW_IN_V2 = {"traces/policy", "traces/policy_offsets"}
NEW_IN_V3 = {"traces/trainable", "traces/filter", "traces/filter_offsets"}


def _write(d: Path, results: list[SessionResult]) -> Path:
    w = ShardWriter(d, 0, ShardConfig(), {"test": "schema"})
    for r in results:
        w.add(r)
    path = w.close()
    assert path is not None
    return path


def test_on_disk_layout_is_pinned(tmp_path: Path, session_result_factory: Any) -> None:
    assert SCHEMA_VERSION == 4 and dataset_names(4) == LAYOUT_V4 and dataset_names(3) == LAYOUT_V3
    assert set(dataset_names(2)) == set(LAYOUT_V3) - NEW_IN_V3
    assert set(dataset_names(1)) == set(LAYOUT_V3) - NEW_IN_V3 - NEW_IN_V2
    path = _write(tmp_path, [session_result_factory()])
    with h5py.File(path, "r") as f:
        names = {f"{g}/{k}" for g in f for k in f[g]}
        assert names == set(LAYOUT_V4) and int(f.attrs[ATTR_SCHEMA_VERSION]) == 4
        assert f["traces/trainable"].dtype == "uint8" and f["tokens/response_versions"].dtype == "int32"


def test_marks_are_columns_and_fields(tmp_path: Path, session_result_factory: Any) -> None:
    results = [session_result_factory(traces=2) for _ in range(3)]
    results[0].trajectory.traces[1].mark_not_trainable("session_timeout")
    results[0].trajectory.traces[1].mark_not_trainable("unparsed_tool_call")
    results[2].trajectory.traces[0].trainable = False
    path = _write(tmp_path, results)
    with h5py.File(path, "r") as f:
        assert f["traces/trainable"][()].tolist() == [1, 0, 1, 1, 0, 1]
        assert bytes(f["traces/filter"][()]) == b"session_timeout,unparsed_tool_call"
    back = list(ShardReader(path).results())
    assert [(t.trainable, t.filter) for r in back for t in r.trajectory.traces] == \
        [(t.trainable, t.filter) for r in results for t in r.trajectory.traces]
    assert all("trainable" not in t.extra for r in back for t in r.trajectory.traces)
    views = list(ShardReader(path).traces(blobs=False))
    assert [(v.trainable, v.filter) for v in views][:2] == [(True, []), (False, ["session_timeout",
                                                                                 "unparsed_tool_call"])]
    assert len(build_index(path, TraceSelect(trainable_only=True))) == 4
    assert validate_paths(path) == (1, [])


def test_a_filter_reason_with_the_separator_is_refused(session_result_factory: Any) -> None:
    r = session_result_factory()
    r.trajectory.traces[0].filter = ["a,b"]
    with pytest.raises(ValueError, match=r"trace 0.filter: expected reasons without ',', got 'a,b'"):
        encode_session(r)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_old_shards_read_the_same(version: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = FIXTURES / f"v{version}"
    expected = json.loads((src / "expected.json").read_text())
    shard = tmp_path / "rank-00000-000000.h5"
    shutil.copy(src / shard.name, shard)
    with h5py.File(shard, "r") as f:
        assert int(f.attrs[ATTR_SCHEMA_VERSION]) == version and "tokens/response_versions" not in f
        assert ("traces/trainable" in f) == (version >= 3)
    assert {e["trainable"] for e in expected} == {True, False} and any(e["filter"] for e in expected)
    reader = ShardReader(shard)
    views = list(reader.traces(blobs=False))
    assert not reader.problems
    assert [(v.key, v.trace_index, v.trainable, v.filter, v.policy, v.response_ids.shape[0]) for v in views] == \
        [(e["key"], e["trace"], e["trainable"], e["filter"], e["policy"], e["response_tokens"]) for e in expected]
    traces = [t for r in ShardReader(shard).results() for t in r.trajectory.traces]
    assert [(t.trainable, t.filter, t.policy) for t in traces] == \
        [(e["trainable"], e["filter"], e["policy"]) for e in expected]
    assert all("trainable" not in t.extra and "filter" not in t.extra for t in traces)
    assert all(v.response_versions.tolist() == [-1] * v.response_ids.shape[0] for v in views)  # not recorded
    assert all(t.response_versions.shape == (0,) for t in traces)  # a Trace that recorded none
    assert all(v.response_top_ids.shape == (v.response_ids.shape[0], 0) for v in views)  # k = 0
    assert all(t.response_top_ids.shape == (0,) and t.top_width == 0 for t in traces)
    assert traces[3].meta.unparsed_tool_calls == {"c1": "bad json"}
    ix = build_index(shard, TraceSelect(trainable_only=True))
    assert sorted(zip(ix.key, ix.trace_in_session.tolist(), strict=True)) == \
        sorted((e["key"], e["trace"]) for e in expected if e["trainable"])
    assert validate_paths(shard) == (1, [])
    assert main(["shards", "validate", str(shard)]) == 0
    assert "1 shards checked, 0 with violations" in capsys.readouterr().out


def test_token_versions_and_top_k_round_trip(tmp_path: Path, session_result_factory: Any) -> None:
    """``tokens/response_versions`` and the top-k columns: what the builders recorded per token comes back per
    trace; a trace that recorded none reads -1 (NaN) everywhere, padded to the shard's k; lengths that do not match
    the response are refused."""
    import numpy as np

    results = [session_result_factory(traces=2) for _ in range(2)]
    t0 = results[0].trajectory.traces[0]
    n = t0.response_ids.shape[0]
    t0.response_versions = np.arange(n, dtype=np.int32) % 3 - 1
    t0.response_top_ids = np.arange(3 * n, dtype=np.int32)
    t0.response_top_logprobs = -np.arange(3 * n, dtype=np.float32) / 10
    t1 = results[1].trajectory.traces[1]  # k = 2: padded to the shard's 3
    t1.response_top_ids = np.full(2 * t1.response_ids.shape[0], 7, dtype=np.int32)
    t1.response_top_logprobs = np.full(2 * t1.response_ids.shape[0], -0.5, dtype=np.float32)
    path = _write(tmp_path, results)
    with h5py.File(path, "r") as f:
        assert int(f.attrs["top_logprobs"]) == 3
    views = {(v.key, v.trace_index): v for v in ShardReader(path).traces(blobs=False)}
    v0 = views[(results[0].key, 0)]
    assert v0.response_top_ids.tolist() == np.arange(3 * n).reshape(n, 3).tolist() and v0.top_width == 3
    v3 = views[(results[1].key, 1)]
    assert v3.response_top_ids[:, :2].tolist() == [[7, 7]] * v3.response_ids.shape[0]
    assert (v3.response_top_ids[:, 2] == -1).all() and np.isnan(v3.response_top_logprobs[:, 2]).all()
    assert (views[(results[0].key, 1)].response_top_ids == -1).all()
    back0 = next(ShardReader(path).results()).trajectory.traces[0]
    assert back0.response_top_logprobs.tolist() == t0.response_top_logprobs.tolist() and back0.top_width == 3
    back = [t for r in ShardReader(path).results() for t in r.trajectory.traces]
    assert back[0].response_versions.tolist() == t0.response_versions.tolist()
    assert back[1].response_versions.shape == (0,)  # as written: none recorded
    views = list(ShardReader(path).traces(blobs=False))
    assert views[0].response_versions.tolist() == t0.response_versions.tolist()
    assert views[1].response_versions.tolist() == [-1] * views[1].response_ids.shape[0]
    assert validate_paths(path) == (1, [])
    results[1].trajectory.traces[0].response_versions = np.zeros(1, np.int32)
    with pytest.raises(ValueError, match="trace 0: response_versions has 1 items"):
        encode_session(results[1])
    t0.response_top_logprobs = t0.response_top_logprobs[:-1]
    with pytest.raises(ValueError, match="trace 0: response_top_ids / response_top_logprobs hold"):
        encode_session(results[0])
