from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from polar_hpc.cli.entry import main
from polar_hpc.export.sft import EmptySelection, export_sft
from polar_hpc.export.split import split_tasks
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.select import TraceSelect
from polar_hpc.wire.results import SessionResult
from tests.fixtures.runs import write_run

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


def _rows(out: Path, variant: str, split: str) -> list[dict[str, Any]]:
    """Every row of one split, read from the files the manifest lists."""
    files = json.loads((out / "manifest.json").read_text())["files"][variant].get(split, [])
    return [row for f in files for row in _jsonl(out / f)]


def test_token_variant_equals_shard_tokens(run: Path, tmp_path: Path) -> None:
    m = export_sft([run], tmp_path / "out", select=TraceSelect(min_reward=1.0))
    out = tmp_path / "out"
    rows = _rows(out, "tokens", "train") + _rows(out, "tokens", "test")
    shard = {(t.key, t.trace_index): t for t in ShardReader(run).traces() if t.session_reward >= 1.0}
    assert len(rows) == len(shard) == m.traces["train"] + m.traces["test"]
    for row in rows:
        t = shard[(row["key"], row["trace_index"])]
        np.testing.assert_array_equal(row["input_ids"], np.concatenate([t.prompt_ids, t.response_ids]))
        np.testing.assert_array_equal(row["loss_mask"], np.concatenate([np.zeros(len(t.prompt_ids)), t.loss_mask]))
        np.testing.assert_array_equal(np.float32(row["logprobs"][row["prompt_length"]:]), t.response_logprobs)
    chat = _rows(out, "chat", "train")
    assert chat[0]["messages"][0]["role"] == "system"
    calls = [c for r in chat for msg in r["messages"] for c in msg.get("tool_calls", [])]
    assert calls and calls[0]["type"] == "function" and isinstance(calls[0]["function"]["arguments"], dict)
    assert chat[0]["tools"][0]["function"]["name"] == "bash"
    assert {r["policy"] for r in chat + rows} == {"sample"}
    for msg in (m for r in chat for m in r["messages"]):  # absent fields are omitted, never null or []
        assert all(v is not None and v != [] for v in msg.values()), msg
        assert isinstance(msg["content"], str)


def _load(out: Path, fmt: str, variant: str, cache: Path, how: str) -> Any:
    import datasets

    if fmt == "hf":
        return datasets.load_from_disk(str(out / variant))
    if how == "card":  # the dataset card's configs
        return datasets.load_dataset(str(out), variant, cache_dir=str(cache))
    builder = "json" if fmt == "jsonl" else "parquet"
    files = json.loads((out / "manifest.json").read_text())["files"][variant]
    return datasets.load_dataset(builder, data_files={s: [str(out / f) for f in fs] for s, fs in files.items()},
                                 cache_dir=str(cache))


@pytest.mark.parametrize(("fmt", "how"), [("jsonl", "card"), ("jsonl", "files"), ("parquet", "card"),
                                          ("parquet", "files"), ("hf", "disk")])
def test_corpus_loads_with_datasets(run: Path, tmp_path: Path, fmt: str, how: str) -> None:
    out = tmp_path / "out"
    m = export_sft([run], out, fmt=fmt, max_shard_bytes=64 << 10)  # type: ignore[arg-type]
    assert len(m.files["chat"]["train"]) > 1 or fmt == "hf"  # sharded by size
    chat = _load(out, fmt, "chat", tmp_path / "cache", how)
    toks = _load(out, fmt, "tokens", tmp_path / "cache", how)
    assert chat["train"].num_rows == m.traces["train"] and chat["test"].num_rows == m.traces["test"]
    msgs = chat["train"][0]["messages"]
    call = next(msg for msg in msgs if "tool_calls" in msg)
    assert call["role"] == "assistant" and isinstance(call["tool_calls"][0]["function"]["arguments"], dict)
    assert "tool_calls" not in msgs[0] and "reasoning_content" not in msgs[0]  # absent, not null
    assert chat["train"][0]["tools"][0]["function"]["name"] == "bash"
    row = toks["test"][0]
    assert len(row["input_ids"]) == len(row["loss_mask"]) and sum(row["loss_mask"][: row["prompt_length"]]) == 0


@pytest.mark.parametrize(("fmt", "how"), [("jsonl", "card"), ("jsonl", "files"), ("parquet", "card"),
                                          ("parquet", "files"), ("hf", "disk")])
def test_empty_test_split_is_absent(tmp_path: Path, session_result_factory: Any, fmt: str, how: str) -> None:
    run = write_run(tmp_path / "run", [session_result_factory(task_id=f"t{i}") for i in range(3)])
    out = tmp_path / "out"
    m = export_sft([run], out, fmt=fmt, test_fraction=0.1)  # type: ignore[arg-type]
    assert m.traces["test"] == 0 and m.splits == ["train"]
    assert not list((out / "chat").glob("test-*"))
    for variant in ("chat", "tokens"):
        ds = _load(out, fmt, variant, tmp_path / "cache", how)
        assert list(ds) == ["train"] and ds["train"].num_rows == m.traces["train"]
    card = (out / "README.md").read_text()
    assert "No test split: no task went there (3 train / 0 test tasks)" in card


def test_empty_match_raises_naming_the_filter(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(EmptySelection, match=r"min_reward=5\.0"):
        export_sft([run], out, select=TraceSelect(min_reward=5.0))
    assert not out.exists()
    m = export_sft([run], out, select=TraceSelect(min_reward=5.0), allow_empty=True)
    assert m.splits == [] and "no data files" in (out / "README.md").read_text()
    assert main(["export", "sft", str(run), "--min-reward", "5", "--out", str(tmp_path / "o2")]) == 1
    assert main(["export", "sft", str(run), "--min-reward", "5", "--out", str(tmp_path / "o2"),
                 "--allow-empty"]) == 0


def test_missing_run_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "sft", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "no such file or directory" in err and "nope" in err and "Traceback" not in err
    (tmp_path / "empty").mkdir()
    assert main(["export", "sft", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "no committed shards" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_reexport_replaces_an_earlier_export_only(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_sft([run], out, fmt="parquet")
    m = export_sft([run], out, fmt="jsonl")
    assert not list(out.glob("*/*.parquet")) and m.files["chat"]["train"][0].endswith(".jsonl")
    other = tmp_path / "other"
    (other / "chat").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="no manifest.json"):
        export_sft([run], other)


def test_split_is_by_task_and_stratified(run: Path, tmp_path: Path, results: list[SessionResult]) -> None:
    m = export_sft([run], tmp_path / "out", test_fraction=0.1, seed=5)
    split_of: dict[str, set[str]] = {}
    for s in ("train", "test"):
        for row in _rows(tmp_path / "out", "chat", s):
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
