"""Runs read together: `shards inspect`, `shards export`, `export sft` and `report` each say how many sessions came
from each run (the same task keys in two runs are two runs' sessions; a key repeated within a run is read once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.cli.entry import main
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.runs import write_run


@pytest.fixture
def runs(tmp_path: Path, session_result_factory: Any) -> tuple[Path, Path]:
    """Run a: t0..t4 accepted, t5 an ERROR. Run b: t0..t2 accepted (other tokens), t0 committed twice."""
    ok = {"status": TraceStatus.COMPLETED, "reward": 1.0}
    a = [session_result_factory(task_id=f"t{i}", **ok) for i in range(5)]
    a.append(session_result_factory(task_id="t5", status=TraceStatus.ERROR, reward=0.0))
    b = [session_result_factory(task_id=f"t{i}", **ok) for i in range(3)]
    write_run(tmp_path / "a", a, per_shard=4)
    write_run(tmp_path / "b", b, per_shard=4, rank=0)
    write_run(tmp_path / "b", b[:1], per_shard=4, rank=1)  # t0 again in run b: a duplicate within the run
    return tmp_path / "a", tmp_path / "b"


def _line(out: str, a: Path, b: Path, na: int, nb: int, folder: str = "/shards") -> str:
    """Readers of shards name a run by its shards folder; `export sft` and `report` by the run as given."""
    line = f"runs       2: {a}{folder} {na}  {b}{folder} {nb}"
    assert line in out.splitlines(), out
    return line


def test_inspect_counts_each_run_under_the_filter(runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    assert main(["shards", "inspect", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "sessions   9  (1 duplicates skipped)" in out
    _line(out, a, b, 6, 3)
    assert main(["shards", "inspect", str(a), str(b), "--status", "completed"]) == 0
    _line(capsys.readouterr().out, a, b, 5, 3)


def test_shards_export_counts_each_run(runs: tuple[Path, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    out_file = tmp_path / "traces.jsonl"
    assert main(["shards", "export", str(a), str(b), "--status", "completed", "--out", str(out_file)]) == 0
    _line(capsys.readouterr().out, a, b, 5, 3)
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert sorted(r["key"] for r in rows) == sorted([f"t{i}/0" for i in range(5)] + [f"t{i}/0" for i in range(3)])


def test_export_sft_counts_each_run(runs: tuple[Path, Path], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    out = tmp_path / "sft"
    assert main(["export", "sft", str(a), str(b), "--min-reward", "1", "--out", str(out)]) == 0
    _line(capsys.readouterr().out, a, b, 5, 3, folder="")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sessions_per_run"] == {str(a): 5, str(b): 3}
    assert manifest["session_duplicates"] == 1


def test_report_counts_each_run(runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    assert main(["report", str(a), str(b), "--no-plots", "--out", str(tmp_path / "report")]) == 0
    out = capsys.readouterr().out
    assert f"Sessions per run: {a} 6, {b} 3" in out.splitlines(), out
    assert "9 sessions over 6 instances" in out
