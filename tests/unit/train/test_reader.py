from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from polar_hpc.store.index import build_index
from polar_hpc.store.select import TraceSelect
from polar_hpc.train.reader import Cursor, CursorMismatch, ReaderConfig, TraceReader
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.runs import write_run


@pytest.fixture
def results(session_result_factory: Any) -> list[SessionResult]:
    out = []
    for i in range(24):
        r = session_result_factory(traces=1 + i % 3, turns=2 + i % 3)
        if i % 4 == 0:
            r.metadata["repo"] = "octo/widgets"
        if i % 5 == 0:
            r.trajectory.traces[0].trainable = False
        out.append(r)
    return out


@pytest.fixture
def run(tmp_path: Path, results: list[SessionResult]) -> Path:
    return write_run(tmp_path / "run", results)


def _expected(results: list[SessionResult], keep: Any) -> Counter[tuple[str, int]]:
    return Counter((r.key, j) for r in results if keep(r) for j in range(len(r.trajectory.traces)))


def _read(run: Path | list[Path], select: TraceSelect | None = None, **cfg: Any) -> list[tuple[str, int]]:
    reader = TraceReader(run, select, ReaderConfig(**cfg))
    out = []
    for b in reader.batches():
        out += list(zip(b.keys, b.trace_index.tolist(), strict=True))
    return out


@pytest.mark.parametrize(
    ("select", "keep"),
    [
        (TraceSelect(), lambda r: True),
        (TraceSelect(min_reward=1.0), lambda r: r.reward >= 1.0),
        (TraceSelect(status=(TraceStatus.COMPLETED,)), lambda r: r.trajectory.status == TraceStatus.COMPLETED),
        (TraceSelect(harness=("pi", "codex")), lambda r: r.harness in ("pi", "codex")),
        (TraceSelect(repos=frozenset({"octo/widgets"})), lambda r: r.metadata.get("repo") == "octo/widgets"),
        (TraceSelect(min_policy_version=3, max_policy_version=6), lambda r: 3 <= r.policy_version <= 6),
        (TraceSelect(metadata={"repo": "octo/widgets"}, min_reward=1.0),
         lambda r: r.metadata.get("repo") == "octo/widgets" and r.reward >= 1.0),
    ],
)
def test_filters_select_exactly(run: Path, results: list[SessionResult], select: TraceSelect, keep: Any) -> None:
    got = Counter(_read(run, select, token_budget=100_000))
    assert got == _expected(results, keep)
    assert got  # the fixture has matches for every filter


def test_trainable_only_drops_marked_traces(run: Path, results: list[SessionResult]) -> None:
    got = set(_read(run, TraceSelect(trainable_only=True), token_budget=100_000))
    marked = {(r.key, 0) for r in results if r.trajectory.traces[0].trainable is False}
    assert marked and not (got & marked)
    assert len(got) == sum(len(r.trajectory.traces) for r in results) - len(marked)


def test_repo_from_task_id(tmp_path: Path, session_result_factory: Any) -> None:
    rs = [session_result_factory(task_id=f"django__django-{n}") for n in range(3)]
    rs.append(session_result_factory(task_id="astropy__astropy-7"))
    ix = build_index(write_run(tmp_path, rs), TraceSelect(repos=frozenset({"django/django"})))
    assert sorted(set(ix.task_id)) == [f"django__django-{n}" for n in range(3)]


def test_dedup_sessions_within_run_and_content_across_runs(
    tmp_path: Path, results: list[SessionResult]
) -> None:
    a = write_run(tmp_path / "a", results, rank=0)
    write_run(tmp_path / "a", results[:5], rank=1)  # same sessions again in another rank's shard
    b = write_run(tmp_path / "b", results[:7])  # same tokens in another run
    n = sum(len(r.trajectory.traces) for r in results)
    n7 = sum(len(r.trajectory.traces) for r in results[:7])
    content = build_index([a, b])
    assert len(content) == n and content.session_duplicates == 5 and content.content_duplicates == n7
    sessions = build_index([a, b], dedup="session")
    assert len(sessions) == n + n7


def test_packing_respects_budget_and_copies_tokens(run: Path, results: list[SessionResult]) -> None:
    budget = 450
    reader = TraceReader(run, None, ReaderConfig(token_budget=budget, seed=3))
    by_key = {r.key: r for r in results}
    seen: Counter[tuple[str, int]] = Counter()
    for b in reader.batches():
        assert b.num_tokens <= budget and b.input_ids.shape[0] == b.num_tokens
        for k, key in enumerate(b.keys):
            tr = by_key[key].trajectory.traces[int(b.trace_index[k])]
            s, e, p = int(b.cu_seqlens[k]), int(b.cu_seqlens[k + 1]), int(b.prompt_lens[k])
            np.testing.assert_array_equal(b.input_ids[s:e], np.concatenate([tr.prompt_ids, tr.response_ids]))
            np.testing.assert_array_equal(b.loss_mask[s:s + p], 0)
            np.testing.assert_array_equal(b.loss_mask[s + p:e], tr.loss_mask)
            np.testing.assert_array_equal(b.logprobs[s + p:e], tr.response_logprobs)
            np.testing.assert_array_equal(b.position_ids[s:e], np.arange(e - s))
            np.testing.assert_array_equal(b.segment_ids[s:e], k)
            seen[(key, int(b.trace_index[k]))] += 1
    longer = sum(1 for r in results for t in r.trajectory.traces if len(t.prompt_ids) + len(t.response_ids) > budget)
    assert reader.stats.skipped_oversize == longer > 0
    assert set(seen.values()) == {1} and len(seen) == sum(len(r.trajectory.traces) for r in results) - longer


def test_padding_and_truncation(run: Path) -> None:
    reader = TraceReader(run, None, ReaderConfig(token_budget=300, oversize="truncate", pad_to_budget=True))
    batches = list(reader.batches())
    assert all(b.input_ids.shape[0] == 300 for b in batches)
    assert reader.stats.truncated > 0 and reader.stats.skipped_oversize == 0
    for b in batches:
        assert (b.segment_ids[b.num_tokens:] == -1).all() and (b.loss_mask[b.num_tokens:] == 0).all()


def test_shuffle_is_seeded_and_epoch_aware(run: Path) -> None:
    def order(seed: int, epoch: int) -> list[int]:
        return TraceReader(run, None, ReaderConfig(seed=seed)).order(epoch).tolist()

    assert order(1, 0) == order(1, 0)
    assert order(1, 0) != order(1, 1)
    assert order(1, 0) != order(2, 0)
    assert sorted(order(1, 1)) == list(range(len(order(1, 1))))


@pytest.mark.parametrize("stop_after", [1, 4, 9])
def test_cursor_resume_yields_exactly_the_rest(run: Path, stop_after: int) -> None:
    cfg = ReaderConfig(token_budget=900, seed=7)
    full = [(b.keys, b.cursor) for b in TraceReader(run, None, cfg).batches(epochs=3)]
    assert len(full) > stop_after
    saved = msgspec.json.encode(full[stop_after - 1][1])  # what a trainer writes with its checkpoint
    resumed = TraceReader(run, None, cfg)  # a fresh process: index rebuilt from the shards
    rest = [b.keys for b in resumed.batches(msgspec.json.decode(saved, type=Cursor), epochs=3)]
    assert rest == [k for k, _ in full[stop_after:]]


def test_cursor_for_other_selection_is_refused(run: Path) -> None:
    cur = next(iter(TraceReader(run, None, ReaderConfig(token_budget=900)).batches())).cursor
    with pytest.raises(CursorMismatch, match="same runs, filters"):
        next(iter(TraceReader(run, TraceSelect(min_reward=1.0), ReaderConfig(token_budget=900)).batches(cur)))


def test_torch_dataset_tensors(run: Path) -> None:
    import torch
    from torch.utils.data import DataLoader

    from polar_hpc.train.torch_data import PackedTraceDataset

    reader = TraceReader(run, None, ReaderConfig(token_budget=800))
    ds = PackedTraceDataset(reader)
    items = list(DataLoader(ds, batch_size=None))
    assert items and all(i["input_ids"].dtype == torch.long and i["input_ids"].shape[0] <= 800 for i in items)
    assert ds.cursor.epoch == 1 and ds.cursor.position == 0


def _keys(items: list[dict[str, Any]], reader: TraceReader) -> Counter[str]:
    """Traces of packed items, identified by their leading token ids (the fixture's ids are random)."""
    out: Counter[str] = Counter()
    for it in items:
        ids, cu = it["input_ids"].numpy(), it["cu_seqlens"].numpy()
        out.update(ids[cu[k]:cu[k + 1]].tobytes().hex()[:64] for k in range(len(cu) - 1))
    return out


def test_torch_dataset_parts_by_rank_and_worker(run: Path) -> None:
    from torch.utils.data import DataLoader

    from polar_hpc.train.torch_data import PackedTraceDataset

    reader = TraceReader(run, None, ReaderConfig(token_budget=800, seed=5))
    every = _keys(list(DataLoader(PackedTraceDataset(reader), batch_size=None)), reader)
    assert sum(every.values()) == len(reader) - reader.stats.skipped_oversize
    per_rank = []
    for rank in range(2):
        ds = PackedTraceDataset(reader, rank=rank, world_size=2, epochs=2)
        items = list(DataLoader(ds, batch_size=None, num_workers=2))
        per_rank.append(_keys(items, reader))
        parts = {int(msgspec.json.decode(it["cursor"], type=Cursor).shard) for it in items}
        assert parts == {2 * rank, 2 * rank + 1}  # rank r's workers read parts 2r and 2r+1
    assert per_rank[0] + per_rank[1] == Counter({k: 2 * v for k, v in every.items()})  # once per epoch
    one = [_keys(list(DataLoader(PackedTraceDataset(reader, rank=r, world_size=2), batch_size=None,
                                 num_workers=2)), reader) for r in range(2)]
    assert one[0] + one[1] == every and not set(one[0]) & set(one[1])  # one epoch: disjoint parts


def test_torch_dataset_resumes_every_worker(run: Path) -> None:
    from torch.utils.data import DataLoader

    from polar_hpc.train.reader import CursorMismatch
    from polar_hpc.train.torch_data import PackedTraceDataset, part_of

    reader = TraceReader(run, None, ReaderConfig(token_budget=700, seed=2))
    full = list(DataLoader(PackedTraceDataset(reader, epochs=1), batch_size=None, num_workers=2))
    saved: dict[int, str] = {}
    first = []
    for item in DataLoader(PackedTraceDataset(reader, epochs=1), batch_size=None, num_workers=2):
        first.append(item)
        saved[part_of(item["cursor"])] = item["cursor"]
        if len(first) == 3:
            break
    rest = list(DataLoader(PackedTraceDataset(TraceReader(run, None, ReaderConfig(token_budget=700, seed=2)),
                                              cursors=saved.values()), batch_size=None, num_workers=2))
    assert _keys(first, reader) + _keys(rest, reader) == _keys(full, reader)
    with pytest.raises(CursorMismatch, match="same world size and num_workers"):
        next(iter(PackedTraceDataset(reader, cursors=saved.values())))


def test_reader_errors_name_what_is_wrong(tmp_path: Path, run: Path) -> None:
    from polar_hpc.store.reader import MissingShards

    with pytest.raises(MissingShards, match="no such file or directory: .*typo"):
        TraceReader(tmp_path / "typo")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingShards, match="no committed shards"):
        TraceReader(tmp_path / "empty")
    with pytest.raises(TypeError,
                       match=r"TraceSelect.harness: expected a tuple .* got str 'pi' \(write harness=\('pi',\)\)"):
        TraceSelect(harness="pi")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown trace status 'DONE'; expected one of COMPLETED, TIMEOUT, ERROR"):
        TraceSelect(status=("DONE",))  # type: ignore[arg-type]
    named = TraceSelect(status=("COMPLETED", "timeout"))  # type: ignore[arg-type]
    assert named.status == (TraceStatus.COMPLETED, TraceStatus.TIMEOUT)
    assert len(TraceReader(run, named)) == len(TraceReader(run, TraceSelect(status=(TraceStatus.COMPLETED,
                                                                                     TraceStatus.TIMEOUT))))
    assert len(TraceReader(run, TraceSelect(harness=["pi"]))) > 0  # type: ignore[arg-type]
