from __future__ import annotations

from pathlib import Path

from polar_hpc.launch.monitor import progress_line, recent_errors
from polar_hpc.wire.control import RunStatus
from polar_hpc.wire.rundir import JobRecord, JobsFile, RunDir


def test_recent_errors_names_component_and_keeps_the_last(tmp_path: Path) -> None:
    folder = RunDir(tmp_path).job_logs("gateway", "12_1")
    folder.mkdir(parents=True)
    (folder / "12_1_0_log.out").write_text(
        "2026 INFO polar_hpc.gateway: fine\n"
        "2026 ERROR polar_hpc.gateway: session a/0: runtime failed\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "RuntimeError: boom\n"
    )
    jobs = JobsFile(backend="slurm", jobs=[JobRecord(component="gateway", index=1, job_id="12_1", backend="slurm",
                                                     folder=str(folder), submitted_at=0.0)])
    errors = recent_errors(jobs)
    assert errors == ["gateway-1: 2026 ERROR polar_hpc.gateway: session a/0: runtime failed",
                      "gateway-1: RuntimeError: boom"]
    assert recent_errors(jobs, limit=1) == ["gateway-1: RuntimeError: boom"]


def test_progress_line_counts_committed_and_errors() -> None:
    status = RunStatus(sessions={"pending": 3, "running": 1, "done": 2, "committed": 5, "error": 1}, accepted=2,
                       failed=3, reward_mean=0.4, ranks_alive=2, throughput_per_min=6.0, eta_s=30.0)
    line = progress_line(status)
    assert "sessions 8/12 done (5 committed)" in line and "accepted 2" in line and "failed 3" in line
    assert "ranks alive 2" in line
    assert "waiting" in progress_line(None)


def test_pid_alive() -> None:
    import os

    from polar_hpc.util.proc import alive

    assert alive(os.getpid())
    assert not alive(2**22 + 12345)
