from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from polar_hpc.cli import main
from polar_hpc.train.report import write_report
from polar_hpc.wire.records import TraceStatus
from tests.unit.train.runs import write_run


def test_report_tables_and_plots(tmp_path: Path, session_result_factory: Any) -> None:
    rs = []
    for i in range(20):
        r = session_result_factory(task_id=f"psf__requests-{i % 5}" if i < 10 else f"pallets__flask-{i}",
                                   sample_index=i, status=TraceStatus.COMPLETED, reward=float(i % 2), turns=3)
        rs.append(r)
    rs[1].trajectory.status = TraceStatus.TIMEOUT
    rs[1].trajectory.error = "agent timed out after 1200 s"
    rs[3].trajectory.traces[0].metadata["engine_time_s"] = 2.0
    run = write_run(tmp_path / "run", rs)
    text = write_report([run], tmp_path / "rep")
    assert "| psf/requests | 5 | 10 | 4 | 40.0% | 4 |" in text  # sample 1 (reward 1) timed out
    assert "| pallets/flask | 10 | 10 | 5 | 50.0% | 5 |" in text
    assert "timeout: agent timed out after 1200 s | 1 |" in text
    assert "n/a" not in text.split("GPU-side throughput:")[1].splitlines()[0]
    for png in ("acceptance_by_repo", "reward_hist", "turns_tokens", "stage_durations"):
        data = (tmp_path / "rep" / f"{png}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    rep = json.loads((tmp_path / "rep/report.json").read_text())
    assert rep["overall"]["sessions"] == 20 and rep["turns"]["median"] == 3


def test_report_cli_without_engine_timings(tmp_path: Path, session_result_factory: Any, capsys: Any) -> None:
    run = write_run(tmp_path / "run", [session_result_factory() for _ in range(4)])
    assert main(["report", str(run), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "GPU-side throughput: n/a" in out and (run / "report/report.md").exists()
