"""The launcher on the real single-node Slurm cluster that .ci/slurm.sh starts (SLURM_CONF set by tools/test.sh)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from polar_hpc.launch.monitor import sacct_states
from polar_hpc.launch.rundir import RunDir
from tests.integration.launch.helpers import ROOT, committed_keys, polar

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

RECIPE = str(ROOT / "recipes" / "local-shell.toml")
SLURM_SETS = [
    "--backend", "slurm",
    "--set", "gateway.num_ranks=2",
    "--set", "inference.resources.gpus_per_node=0",
    "--set", "inference.resources.cpus_per_task=1",
    "--set", "gateway.resources.cpus_per_task=1",
    "--set", "coordinator.resources.cpus_per_task=1",
    "--set", "gateway.resources.time_min=20",
]


@pytest.fixture(autouse=True)
def _slurm_up() -> None:
    if shutil.which("sbatch") is None or not os.environ.get("SLURM_CONF"):
        pytest.fail("the slurm tier needs the cluster from `bash .ci/slurm.sh up` and SLURM_CONF (tools/test.sh does both)")
    out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0 and out.stdout.strip(), f"sinfo: {out.stderr}"


def _expected(samples: int) -> set[str]:
    return {f"{t}/{i}" for t in ("calc-add", "fizzbuzz-15", "words-reverse") for i in range(samples)}


def _jobs(run_dir: Path) -> dict[str, str]:
    jobs = RunDir(run_dir).read_jobs()
    assert jobs is not None
    return {f"{j.component}-{j.index}": j.job_id for j in jobs.jobs}


def _wait_for(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


def test_slurm_run_completes_with_a_gateway_array(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, "--wait", "--timeout", "600", timeout=660)
    assert out.returncode == 0, out.stdout + out.stderr
    jobs = _jobs(run_dir)
    assert jobs["gateway-0"].endswith("_0") and jobs["gateway-1"].endswith("_1")
    assert jobs["gateway-0"].split("_")[0] == jobs["gateway-1"].split("_")[0], "gateway ranks are one array job"
    keys, dups = committed_keys(run_dir)
    assert sorted(keys) == sorted(_expected(2)) and dups == 0
    ranks = {p.name.split("-")[1] for p in (run_dir / "shards").glob("rank-*.h5")}
    assert ranks, "no shards"
    _wait_for(lambda: all(s == "COMPLETED" for s in sacct_states(list(jobs.values())).values()), 60,
              "every job COMPLETED in sacct")
    st = polar("status", str(run_dir), "--json")
    doc = json.loads(st.stdout)
    assert doc["status"]["finished"] is True
    assert {c["job_id"] for c in doc["components"]} == set(jobs.values())
    assert all(c["state"] == "COMPLETED" for c in doc["components"])


def test_cancel_drains_and_commits(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, "--set", "tasks.num_samples=6",
                "--set", "shards.max_sessions=100")
    assert out.returncode == 0, out.stderr
    status_path = run_dir / "status.json"

    def some_done() -> bool:
        try:
            s = json.loads(status_path.read_text())
        except (OSError, ValueError):
            return False
        return sum(v for k, v in s.get("sessions", {}).items() if k.lower() in ("done", "committed")) >= 2

    _wait_for(some_done, 400, "two sessions done")
    out = polar("cancel", str(run_dir), "--grace", "90", timeout=200)
    assert out.returncode == 0, out.stderr
    jobs = _jobs(run_dir)
    _wait_for(lambda: not any(s in ("RUNNING", "PENDING") for s in sacct_states(list(jobs.values())).values()), 60,
              "every job to leave RUNNING/PENDING")
    keys, dups = committed_keys(run_dir)
    assert len(keys) >= 2 and dups == 0, "sessions done before the cancel were not committed"
    assert not list((run_dir / "shards").glob("*.tmp")), "a shard was left half-written"
    val = polar("shards", "validate", str(run_dir / "shards"))
    assert val.returncode == 0, val.stdout


def test_requeued_gateway_rank_still_completes_exactly_once(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, "--set", "tasks.num_samples=4")
    assert out.returncode == 0, out.stderr
    jobs = _jobs(run_dir)
    victim = jobs["gateway-1"]
    _wait_for(lambda: sacct_states([victim]).get(victim) == "RUNNING", 120, f"{victim} RUNNING")
    _wait_for(lambda: (run_dir / "status.json").exists(), 120, "status.json")
    time.sleep(5)  # let it take sessions
    subprocess.run(["scontrol", "requeue", victim], check=True, timeout=30)
    _wait_for(lambda: sacct_states([victim]).get(victim) in ("PENDING", "REQUEUED"), 120, f"{victim} requeued")
    subprocess.run(["scontrol", "update", f"JobId={victim}", "StartTime=now"], check=True, timeout=30)
    from polar_hpc.launch.monitor import wait_run

    assert wait_run(RunDir(run_dir), timeout_s=600) == 0
    keys, dups = committed_keys(run_dir)
    assert sorted(keys) == sorted(_expected(4))
    assert dups == 0
