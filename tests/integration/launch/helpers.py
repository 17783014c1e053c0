from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from polar_hpc.launch.monitor import _component_pid, _controller_pid
from polar_hpc.store import ShardReader
from polar_hpc.util.proc import signal_tree
from polar_hpc.wire.rundir import RunDir

ROOT = Path(__file__).parents[3]

SLURM_SETS = [
    "--backend", "slurm",
    "--set", "gateway.num_ranks=2",
    "--set", "inference.resources.gpus_per_node=0",
    "--set", "inference.resources.cpus_per_task=1",
    "--set", "gateway.resources.cpus_per_task=1",
    "--set", "coordinator.resources.cpus_per_task=1",
    "--set", "gateway.resources.time_min=20",
]
"""A run on the single-node CI cluster (.ci/slurm.sh): no GPU, one CPU per component, two gateway ranks."""


def wait_until(pred: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``pred`` every 0.5 s; fail the test naming ``what`` after ``timeout_s``."""
    import pytest

    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.5)


def require_slurm() -> None:
    """The slurm tier runs on the cluster from `bash .ci/slurm.sh up` with SLURM_CONF set (tools/test.sh)."""
    import pytest

    if shutil.which("sbatch") is None or not os.environ.get("SLURM_CONF"):
        pytest.fail("the slurm tier needs the cluster from `bash .ci/slurm.sh up` and SLURM_CONF "
                    "(tools/test.sh does both)")
    out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0 and out.stdout.strip(), f"sinfo: {out.stderr}"


def start_if_held(job_id: str, last: list[float]) -> None:
    """A requeued job waits ~2 min in the queue (BeginTime): start it now, at most every 15 s. Not at once: a
    requeued job restarted within the second its old credential was revoked is refused by slurmd ("Job
    credential revoked") and ends FAILED, never to come back; ``last[0]``: when we last tried (or the requeue)."""
    from polar_hpc.launch.monitor import sacct_states

    if time.monotonic() - last[0] > 15 and sacct_states([job_id]).get(job_id) == "PENDING":
        subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], check=False, timeout=30)
        last[0] = time.monotonic()


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
