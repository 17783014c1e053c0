from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from polar_hpc.launch.monitor import _component_pid, _controller_pid
from polar_hpc.store import ShardReader
from polar_hpc.util.proc import signal_tree
from polar_hpc.wire.rundir import RunDir

ROOT = Path(__file__).parents[3]


def polar(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "polar_hpc", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)


def committed_keys(run_dir: Path) -> tuple[list[str], int]:
    reader = ShardReader(run_dir)
    keys = [r.key for r in reader.results()]
    return keys, len(reader.duplicates)


def kill_run(run_dir: Path) -> None:
    """SIGKILL every process of a local run (controllers and components), by pid."""
    run = RunDir(run_dir)
    jobs = run.read_jobs()
    assert jobs is not None
    import signal

    for job in jobs.jobs:
        for pid in (_controller_pid(run, job), _component_pid(run, job)):
            if pid is not None:
                signal_tree(pid, signal.SIGKILL)


def stop_run(run_dir: Path) -> None:
    """Test teardown: end whatever a run launched, by its ledger (scancel its Slurm jobs; SIGKILL local pids)."""
    run = RunDir(run_dir)
    jobs = run.read_jobs() if run.jobs_path.is_file() else None
    if jobs is None:
        return
    if jobs.backend == "slurm":
        ids = sorted({j.job_id.split("_")[0] for j in jobs.jobs})
        subprocess.run(["scancel", *ids], check=False, timeout=30, capture_output=True)
    else:
        kill_run(run_dir)
