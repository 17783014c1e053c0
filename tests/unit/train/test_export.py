from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from polar_hpc.cli import main
from polar_hpc.store.reader import ShardReader
from polar_hpc.train.export import export_sft
from polar_hpc.train.index import TraceSelect
from polar_hpc.train.split import split_tasks
from polar_hpc.wire.records import SessionResult
from tests.unit.train.runs import write_run

REPOS = ["django/django", "astropy/astropy", "psf/requests", "octo/tiny"]


@pytest.fixture
def results(session_result_factory: Any) -> list[SessionResult]:
    out = []
    for i in range(60):
        repo = REPOS[i % 4] if i % 4 != 3 or i < 12 else REPOS[i % 3]
        owner, name = repo.split("/")
        for s in range(2):  # two samples per task
            r = session_result_factory(task_id=f"{owner}__{name}-{i}", sample_index=s, traces=1 + i % 2)
            out.append(r)
    return out


@pytest.fixture
def run(tmp_path: Path, results: list[SessionResult]) -> Path:
    return write_run(tmp_path / "run", results, per_shard=16)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_token_variant_equals_shard_tokens(run: Path, tmp_path: Path) -> None:
    m = export_sft([run], tmp_path / "out", select=TraceSelect(min_reward=1.0))
    rows = _jsonl(tmp_path / "out/tokens/train.jsonl") + _jsonl(tmp_path / "out/tokens/test.jsonl")
    shard = {(t.key, t.trace_index): t for t in ShardReader(run).traces() if t.session_reward >= 1.0}
    assert len(rows) == len(shard) == m.traces["train"] + m.traces["test"]
    for row in rows:
        t = shard[(row["key"], row["trace_index"])]
        np.testing.assert_array_equal(row["input_ids"], np.concatenate([t.prompt_ids, t.response_ids]))
        np.testing.assert_array_equal(row["loss_mask"], np.concatenate([np.zeros(len(t.prompt_ids)), t.loss_mask]))
        np.testing.assert_array_equal(np.float32(row["logprobs"][row["prompt_length"]:]), t.response_logprobs)
    chat = _jsonl(tmp_path / "out/chat/train.jsonl")
    assert chat[0]["messages"][0]["role"] == "system"
    calls = [c for r in chat for msg in r["messages"] for c in msg["tool_calls"]]
    assert calls and calls[0]["type"] == "function" and json.loads(calls[0]["function"]["arguments"])
    assert json.loads(chat[0]["tools"])[0]["function"]["name"] == "bash"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "hf"])
def test_chat_records_load_with_datasets(run: Path, tmp_path: Path, fmt: str) -> None:
    import datasets

    out = tmp_path / "out"
    m = export_sft([run], out, fmt=fmt)  # type: ignore[arg-type]
    if fmt == "hf":
        chat = datasets.load_from_disk(str(out / "chat"))
        toks = datasets.load_from_disk(str(out / "tokens"))
    else:
        builder = "json" if fmt == "jsonl" else "parquet"
        files = {s: str(out / "chat" / f"{s}.{fmt}") for s in ("train", "test")}
        chat = datasets.load_dataset(builder, data_files=files, cache_dir=str(tmp_path / "cache"))
        tfiles = {s: str(out / "tokens" / f"{s}.{fmt}") for s in ("train", "test")}
        toks = datasets.load_dataset(builder, data_files=tfiles, cache_dir=str(tmp_path / "cache"))
    assert chat["train"].num_rows == m.traces["train"] and chat["test"].num_rows == m.traces["test"]
    msg = chat["train"][0]["messages"][2]
    assert msg["role"] == "assistant" and isinstance(msg["tool_calls"][0]["function"]["arguments"], str)
    row = toks["test"][0]
    assert len(row["input_ids"]) == len(row["loss_mask"]) and sum(row["loss_mask"][: row["prompt_length"]]) == 0


def test_split_is_by_task_and_stratified(run: Path, tmp_path: Path, results: list[SessionResult]) -> None:
    m = export_sft([run], tmp_path / "out", test_fraction=0.1, seed=5)
    split_of: dict[str, set[str]] = {}
    for s in ("train", "test"):
        for row in _jsonl(tmp_path / f"out/chat/{s}.jsonl"):
            split_of.setdefault(row["task_id"], set()).add(s)
    assert all(len(v) == 1 for v in split_of.values())  # no task in both splits
    n_tasks = len({r.task_id for r in results})
    assert m.tasks["test"] == round(0.1 * n_tasks) and m.tasks["train"] == n_tasks - m.tasks["test"]
    per_repo = Counter(t.split("__")[0] for t, s in split_of.items() if s == {"test"})
    tasks_per_repo = Counter(t.split("__")[0] for t in split_of)
    for owner, n in tasks_per_repo.items():
        assert abs(per_repo[owner] - 0.1 * n) < 1.0, (owner, per_repo[owner], n)
    card = (tmp_path / "out/README.md").read_text()
    assert f"| test | {m.tasks['test']} | {m.traces['test']} |" in card and "django/django" in card


def test_split_tasks_largest_remainder() -> None:
    pairs = [(f"a-{i}", "a") for i in range(15)] + [(f"b-{i}", "b") for i in range(15)] + [("c-0", "c")]
    s = split_tasks(pairs, 0.1, seed=1)
    assert Counter(s.values())["test"] == 3
    assert s == split_tasks(reversed(pairs), 0.1, seed=1)
    with pytest.raises(ValueError, match="test_fraction"):
        split_tasks(pairs, 1.0)


def test_cli_dedups_across_runs(tmp_path: Path, results: list[SessionResult]) -> None:
    a = write_run(tmp_path / "a", results)
    b = write_run(tmp_path / "b", results[:10])
    rc = main(["export", "sft", str(a), str(b), "--min-reward", "1", "--out", str(tmp_path / "out")])
    assert rc == 0
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    accepted = sum(len(r.trajectory.traces) for r in results if r.reward >= 1)
    assert sum(manifest["traces"].values()) == accepted
    assert manifest["content_duplicates"] == sum(len(r.trajectory.traces) for r in results[:10] if r.reward >= 1)
