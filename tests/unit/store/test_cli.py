from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from polar_hpc.cli.entry import main
from polar_hpc.config.run import ShardConfig
from polar_hpc.store.writer import ShardWriter
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus


@pytest.fixture
def run_dir(tmp_path: Path, session_result_factory: Any) -> tuple[Path, list[SessionResult]]:
    rs = [
        session_result_factory(status=TraceStatus.COMPLETED, harness="codex", reward=1.0, traces=2),
        session_result_factory(status=TraceStatus.TIMEOUT, harness="pi", reward=0.0),
        session_result_factory(status=TraceStatus.COMPLETED, harness="pi", reward=0.5),
    ]
    rs[0].trajectory.traces[1].mark_not_trainable("unparsed_tool_call")
    rs[2].trajectory.traces[0].mark_not_trainable("unparsed_tool_call")
    w = ShardWriter(tmp_path / "shards", 0, ShardConfig(max_sessions=2), {"test": "cli"})
    for r in rs:
        w.add(r)
    w.close()
    return tmp_path, rs


def test_store_cli_module_is_light() -> None:
    code = "import sys, polar_hpc.cli.shards; print(sorted(m for m in ('h5py', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_inspect(run_dir: tuple[Path, list[SessionResult]], capsys: pytest.CaptureFixture[str]) -> None:
    d, rs = run_dir
    assert main(["shards", "inspect", str(d)]) == 0
    out = capsys.readouterr().out
    assert "shards     2" in out and "sessions   3" in out and "traces     4" in out
    assert "COMPLETED 2  TIMEOUT 1" in out and "pi 2  codex 1" in out
    assert main(["shards", "inspect", str(d), "--json", "--harness", "pi"]) == 0
    s = json.loads(capsys.readouterr().out)
    traces = [t for r in rs[1:] for t in r.trajectory.traces]
    assert s["sessions"] == 2 and s["traces"] == 2
    assert s["prompt_tokens"] == sum(t.prompt_ids.shape[0] for t in traces)
    assert s["trainable_tokens"] == sum(int(t.loss_mask.sum()) for t in traces)
    assert sum(s["reward_counts"]) == 2 and s["reward_mean"] == 0.25


def test_export_jsonl(run_dir: tuple[Path, list[SessionResult]], tmp_path: Path) -> None:
    d, rs = run_dir
    out = tmp_path / "out.jsonl"
    assert (
        main(["shards", "export", str(d), "--out", str(out), "--status", "completed", "--min-reward", "0.6"])
        == 0
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["key"], row["trace_index"]) for row in lines] == [(rs[0].key, 0), (rs[0].key, 1)]
    t = rs[0].trajectory.traces[1]
    row = lines[1]
    assert row["response_ids"] == t.response_ids.tolist() and row["loss_mask"] == t.loss_mask.tolist()
    assert np.array(row["response_logprobs"], dtype=np.float32).tobytes() == t.response_logprobs.tobytes()
    assert row["response_messages"] == msgspec.to_builtins(t.response_messages)
    assert row["status"] == "COMPLETED" and row["harness"] == "codex"
    assert (row["trainable"], row["filter"]) == (t.trainable, t.filter)


def test_export_parquet(run_dir: tuple[Path, list[SessionResult]], tmp_path: Path) -> None:
    pq = pytest.importorskip(
        "pyarrow.parquet", reason="pyarrow is the [train] extra; parquet export needs it"
    )
    d, rs = run_dir
    out = tmp_path / "out.parquet"
    assert main(["shards", "export", str(d), "--format", "parquet", "--out", str(out)]) == 0
    table = pq.read_table(out)
    assert table.num_rows == 4
    assert table.column("key").to_pylist() == [rs[0].key, rs[0].key, rs[1].key, rs[2].key]
    col = table.column("response_logprobs").combine_chunks()
    assert col.type.value_type.bit_width == 32
    t = rs[2].trajectory.traces[0]
    assert np.asarray(col[3].values).tobytes() == t.response_logprobs.tobytes()
    assert json.loads(table.column("prompt_messages")[3].as_py()) == msgspec.to_builtins(t.prompt_messages)
    assert table.column("trainable").to_pylist()[3] is t.trainable and table.column("filter")[3].as_py() == t.filter
