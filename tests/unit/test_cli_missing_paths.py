"""Every command that reads a run or shards exits 2 on a path that is not there, saying which, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.cli.entry import main


@pytest.mark.parametrize("argv", [
    ["shards", "inspect", "{p}"], ["shards", "export", "{p}", "--out", "{t}/x.jsonl"], ["shards", "show", "k/0", "{p}"],
    ["export", "sft", "{p}", "--out", "{t}/sft"], ["report", "{p}"], ["view", "{p}"], ["status", "{p}"],
    ["cancel", "{p}"], ["resume", "{p}"], ["shards", "logprobs", "{p}", "--model", "{t}"],
])
def test_missing_path_exits_2(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-run"
    assert main([a.format(p=missing, t=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err
    assert not (tmp_path / "sft").exists() and not (tmp_path / "x.jsonl").exists()
