from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from polar_hpc.cli.entry import main
from polar_hpc.report.run import write_report
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.runs import write_run


def test_report_tables_and_plots(tmp_path: Path, session_result_factory: Any) -> None:
    rs = []
    for i in range(20):
        r = session_result_factory(task_id=f"psf__requests-{i % 5}" if i < 10 else f"pallets__flask-{i}",
                                   sample_index=i, status=TraceStatus.COMPLETED, reward=float(i % 2), turns=3)
        rs.append(r)
    rs[1].trajectory.status = TraceStatus.TIMEOUT
    rs[1].trajectory.error = "agent timed out after 1200 s"
    rs[3].trajectory.traces[0].meta.engine_time_s = 2.0
    run = write_run(tmp_path / "run", rs)
    text = write_report([run], tmp_path / "rep")
    assert "| psf/requests | 5 | 10 | 4 | 40.0% | 4 |" in text  # sample 1 (reward 1) timed out
    assert "| pallets/flask | 10 | 10 | 5 | 50.0% | 5 |" in text
    assert "timeout: agent timed out after 1200 s | 1 |" in text
    assert "n/a" not in text.split("Engine throughput:")[1].splitlines()[0] and "GPU" not in text
    for png in ("acceptance_by_repo", "reward_hist", "turns_tokens", "stage_durations"):
        data = (tmp_path / "rep" / f"{png}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    rep = json.loads((tmp_path / "rep/report.json").read_text())
    assert rep["overall"]["sessions"] == 20 and rep["turns"]["median"] == 3


def test_report_cli_without_engine_timings(tmp_path: Path, session_result_factory: Any, capsys: Any) -> None:
    run = write_run(tmp_path / "run", [session_result_factory() for _ in range(4)])
    assert main(["report", str(run), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "Engine throughput: n/a" in out and (run / "report/report.md").exists()


async def test_report_on_recorded_sdk_run(sdk_run: Path, tmp_path: Path) -> None:
    text = write_report([sdk_run], tmp_path / "rep")
    assert "| tests still failing: test_add.py::test_add | 2 |" in text  # sessions 2 and 5 fail their test
    assert "reward below threshold" not in text
    stages = text.split("## Stages (pipeline order)")[1].split("\n\n")[1]
    assert [line.split("`")[1] for line in stages.splitlines()[2:]] == ["init", "run", "build", "evaluate"]
    assert "| `init` | 4 ms | 4 ms | 4 ms |" in stages and "e-0" not in text
    assert "| openai-sdk | 6 | 4 | 66.7% | 0.667 | 3 |" in text  # per-harness: median 3 turns
    rep = json.loads((tmp_path / "rep/report.json").read_text())
    assert list(rep["stages"]) == ["init", "run", "build", "evaluate"]
    import matplotlib.image as mpimg

    assert mpimg.imread(tmp_path / "rep/stage_durations.png").shape[0] > 300


def test_report_missing_or_empty_run_fails(tmp_path: Path, capsys: Any) -> None:
    assert main(["report", str(tmp_path / "typo"), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert "no such file or directory" in err and "typo" in err and not (tmp_path / "rep").exists()
    RunDir(tmp_path / "run").shards.mkdir(parents=True)
    assert main(["report", str(tmp_path / "run")]) == 2
    assert "no committed shards" in capsys.readouterr().err


def test_report_of_a_grpo_run_plots_reward_and_logprob_difference_per_step(tmp_path: Path,
                                                                            session_result_factory: Any) -> None:
    from polar_hpc.train.grpo.batch import GroupCounts
    from polar_hpc.train.grpo.metrics import StepMetrics, append_step, read_steps
    from polar_hpc.train.grpo.mismatch import Bucket, Mismatch

    run = write_run(tmp_path / "run", [session_result_factory() for _ in range(4)])

    def split(i: int) -> Mismatch:  # step i: 10 tokens of lag 0 at |Δ| 0.01, 10 of lag 1 at 0.1 (i of them masked)
        return Mismatch(harness={"shell": Bucket(tokens=20, mean_abs=0.055, max_abs=0.1, masked=i)},
                        lag={"0": Bucket(tokens=10, mean_abs=0.01, max_abs=0.01),
                             "1": Bucket(tokens=10, mean_abs=0.1, max_abs=0.1, masked=i)},
                        turn={"0": Bucket(tokens=20, mean_abs=0.055, max_abs=0.1, masked=i)})

    written = [StepMetrics(step=i + 1, reward=0.25 * i, loss=-0.01 * i, logp_diff_mean=1e-6 * (i + 1),
                           logp_diff_max=3e-6, clipped_share=0.5 * i, rollout_versions=[str(i) if i else "default"],
                           pushed_version=i + 1, wait_s=1.0, step_s=4.0, counts=GroupCounts(sessions=8, trained=8),
                           masked_share=0.05 * i, grad_norm=0.5 if i else None, mismatch=split(i) if i else None,
                           time=0.0) for i in range(3)]
    for m in written:
        append_step(run, m)
    assert read_steps(run) == written  # read back as written
    text = write_report([run], tmp_path / "rep")
    assert "## Training (GRPO)" in text
    assert "| 1 | 0.000 | -0.0000 | - | 1.00e-06 | 3.00e-06 | 0.0% | 0.0% | default | 25% |" in text
    assert "| 3 | 0.500 | -0.0200 | 0.5 | 3.00e-06 | 3.00e-06 | 100.0% | 10.0% | 2 | 25% |" in text
    # steps 2 and 3 merged: lag 1 has 20 tokens, 3 of them masked (15%)
    assert "| 1 | 20 | 1.00e-01 | 1.00e-01 | 15.0% | 0.0% |" in text
    assert "| shell | 40 | 5.50e-02 | 1.00e-01 | 7.5% | 0.0% |" in text
    assert "![grpo_steps](grpo_steps.png)" in text
    assert (tmp_path / "rep" / "grpo_steps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_durations_histogram_reasons_and_forced_tokens(tmp_path: Path, session_result_factory: Any) -> None:
    reason = "the sandbox's prepare step failed: " + "git init exited 128 because the workspace is read-only " * 3
    rs = [session_result_factory(sample_index=i, status=TraceStatus.COMPLETED, reward=1.0) for i in range(3)]
    rs.append(session_result_factory(sample_index=3, status=TraceStatus.ERROR, reward=1.0))
    rs[3].trajectory.error = reason
    for r in rs:
        r.timings = {"init": 2.0, "run": 10.0, "evaluate": 1.0, "total": 13.5}
        for t in r.trajectory.traces:
            t.policy = "oracle"
    run = write_run(tmp_path / "run", rs)
    write_report([run], tmp_path / "rep", plots=False)
    rep = json.loads((tmp_path / "rep/report.json").read_text())
    assert {h["median_duration_s"] for h in rep["harness_stats"]} == {13.5}, "the total, not the stages summed"
    assert rep["reward_counts"] == [4] and rep["reward_bins"] == [0.5, 1.5], "constant rewards: one bin around them"
    assert rep["failures"] == {f"error: {reason.strip()}": 1}, "the whole reason"
    text = (tmp_path / "rep/report.md").read_text()
    assert "| forced tokens |" in text and "sampled tokens" not in text
