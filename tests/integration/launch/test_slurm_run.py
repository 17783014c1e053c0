"""The launcher on the real single-node Slurm cluster that .ci/slurm.sh starts (SLURM_CONF set by tools/test.sh).

Every test gets its run dir from the ``run_dir`` fixture, which scancels the run's jobs when the test ends."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from polar_hpc.launch.monitor import sacct_states, wait_run
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.waits import read_waits
from tests.fixtures.waits import wait_for
from tests.integration.launch.helpers import ROOT, SLURM_SETS, committed_keys, polar, require_slurm, start_if_held

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

RECIPE = str(ROOT / "recipes" / "local-shell.toml")
HELD = ["--set", 'inference.resources.extra={begin="now+3600"}']
"""The inference job waits in the queue (BeginTime) until the test lets it start."""


@pytest.fixture(autouse=True)
def _slurm_up() -> None:
    require_slurm()


def _expected(samples: int) -> set[str]:
    return {f"{t}/{i}" for t in ("calc-add", "fizzbuzz-15", "words-reverse") for i in range(samples)}


def _jobs(run_dir: Path) -> dict[str, str]:
    jobs = RunDir(run_dir).read_jobs()
    assert jobs is not None
    return {f"{j.component}-{j.index}": j.job_id for j in jobs.jobs}


_wait_for = partial(wait_for, interval_s=0.5)
"""Each poll runs sacct."""


def _scontrol(*args: str) -> None:
    subprocess.run(["scontrol", *args], check=True, timeout=30)


def _logs(run_dir: Path, component: str, job_id: str) -> str:
    return "".join(p.read_text(errors="replace") for p in RunDir(run_dir).job_logs(component, job_id).glob("*.out"))


@pytest.mark.timeout(800)
def test_slurm_run_completes_with_a_gateway_array_and_resume_submits_nothing(run_dir: Path) -> None:
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, "--wait", "--timeout", "600", timeout=660)
    assert out.returncode == 0, out.stdout + out.stderr
    jobs = _jobs(run_dir)
    assert jobs["gateway-0"].endswith("_0") and jobs["gateway-1"].endswith("_1")
    assert jobs["gateway-0"].split("_")[0] == jobs["gateway-1"].split("_")[0], "gateway ranks are one array job"
    keys, dups = committed_keys(run_dir)
    assert sorted(keys) == sorted(_expected(2)) and dups == 0
    _wait_for(lambda: all(s == "COMPLETED" for s in sacct_states(list(jobs.values())).values()), 60,
              "every job COMPLETED in sacct")
    st = polar("status", str(run_dir), "--json")
    doc = json.loads(st.stdout)
    assert doc["status"]["finished"] is True and doc["state"] == "finished"
    assert {c["job_id"] for c in doc["components"]} == set(jobs.values())
    assert all(c["state"] == "COMPLETED" and c["node"] and c["time_limit"] for c in doc["components"])
    ledger = RunDir(run_dir).jobs_path.read_bytes()
    out = polar("resume", str(run_dir))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{run_dir} already finished (sessions 6/6 ") and "nothing submitted" in out.stdout
    assert RunDir(run_dir).jobs_path.read_bytes() == ledger
    mine = subprocess.run(["squeue", "-h", "-n", "local-shell-gateway,local-shell-inference,local-shell-coordinator",
                           "-o", "%i"], capture_output=True, text=True, timeout=30).stdout.split()
    assert mine == [], f"resume of a finished run left jobs in the queue: {mine}"


@pytest.mark.timeout(700)
def test_gateways_wait_for_a_held_inference_job_report_it_then_run(run_dir: Path) -> None:
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, *HELD, "--set", "tasks.num_samples=1")
    assert out.returncode == 0, out.stderr
    jobs = _jobs(run_dir)
    inference = jobs["inference-0"]
    _scontrol("hold", inference)
    held = f"waiting for inference-0: job {inference} PENDING (JobHeld"  # JobHeldAdmin when root holds it

    def reported() -> bool:
        waits = read_waits(run_dir)
        return all(w in waits and waits[w].detail.startswith(held) for w in ("gateway-0", "gateway-1"))

    _wait_for(reported, 180, f"both gateways to report {held!r}")
    assert all(sacct_states([jobs[g]])[jobs[g]] == "RUNNING" for g in ("gateway-0", "gateway-1"))
    st = polar("status", str(run_dir))
    assert f"gateway-0 {held}" in st.stdout, st.stdout
    assert held in _logs(run_dir, "gateway", jobs["gateway-0"])
    # status's Slurm columns: state, reason, node, elapsed, time limit per component
    rows = {line.split()[0]: line.split() for line in st.stdout.splitlines()[1:] if line[:1].isalpha()
            and len(line.split()) == 9}
    node = subprocess.run(["sinfo", "-h", "-o", "%N"], capture_output=True, text=True, timeout=30).stdout.strip()
    assert rows["inference-0"][1:] == [inference, "-", "PENDING", "no", rows["inference-0"][5], "-", "0:00",
                                       "1:00:00"], st.stdout
    assert rows["inference-0"][5].startswith("JobHeld"), st.stdout
    for g in ("gateway-0", "gateway-1"):
        assert rows[g][1] == jobs[g] and rows[g][2].isdigit() and rows[g][3] == "RUNNING", st.stdout
        assert rows[g][5] in ("None", "-") and rows[g][6] == node, st.stdout
        assert re.fullmatch(r"\d+:\d\d", rows[g][7]) and rows[g][8] == "20:00", st.stdout
    # the live display of --wait on a terminal (a pty): the job states and both waits under the table
    live = subprocess.run(["script", "-qfec", f"{sys.executable} -m polar_hpc resume {run_dir} --wait --timeout 12",
                           "/dev/null"], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm"})
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", live.stdout)
    assert "every component is still queued or running; nothing submitted" in screen, screen
    assert "done  queued  init  ready  run  postrun  accepted  tok/s  elapsed  ETA" in screen, screen
    assert re.search(r"jobs: inference 1 PENDING \(JobHeld\w*\) · coordinator 1 RUNNING · gateway 2 RUNNING",
                     screen), screen
    assert f"gateway-0 {held}" in screen and f"gateway-1 {held}" in screen, screen
    assert "gave up waiting after 12s; the run goes on" in screen, screen
    _scontrol("release", inference)
    _scontrol("update", f"JobId={inference}", "StartTime=now")
    assert wait_run(RunDir(run_dir), timeout_s=400) == 0
    keys, dups = committed_keys(run_dir)
    assert sorted(keys) == sorted(_expected(1)) and dups == 0
    assert read_waits(run_dir) == {}


@pytest.mark.timeout(120)
async def test_a_wait_outlasts_its_deadline_while_the_job_is_held_and_fails_fast_when_it_is_cancelled(
        tmp_path: Path) -> None:
    """gateway.waits on a real Slurm job: held, the wait goes on past its 2 s deadline; cancelled, it stops at once."""
    import asyncio

    from polar_hpc.gateway.waits import JobWatch, WaitFailed, wait_for_endpoints
    from polar_hpc.wire.rundir import JobRecord, JobsFile

    job = subprocess.run(["sbatch", "--parsable", "--hold", "-t", "1", "-o", "/dev/null", "--wrap", "true"],
                         capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    try:
        RunDir(tmp_path).write_jobs(JobsFile(backend="slurm", jobs=[JobRecord(
            component="inference", index=0, job_id=job, backend="slurm", folder=str(tmp_path),
            submitted_at=time.time())]))
        waiting = asyncio.create_task(wait_for_endpoints(tmp_path, ["inference-0"], me="gateway-0", timeout_s=2,
                                                         watch=JobWatch(tmp_path, state_poll_s=0.5), poll_s=0.1))
        await asyncio.sleep(6)
        assert not waiting.done(), waiting
        assert read_waits(tmp_path)["gateway-0"].detail.startswith(f"waiting for inference-0: job {job} PENDING "
                                                                    "(JobHeld")
        subprocess.run(["scancel", job], check=True, timeout=30)
        with pytest.raises(WaitFailed) as info:
            await asyncio.wait_for(waiting, 30)
        assert str(info.value).startswith(f"gateway-0: inference-0: job {job} CANCELLED before publishing its "
                                          "endpoint; gave up waiting for inference-0")
    finally:
        subprocess.run(["scancel", job], check=False, timeout=30)


@pytest.mark.timeout(600)
def test_wait_exits_nonzero_when_the_run_is_gone_and_cancel_is_quick(run_dir: Path) -> None:
    """The gateway array and the coordinator cancelled by hand: nothing can bring the run back (lost gateways alone
    are resubmitted by the monitor in the coordinator's job: test_slurm_resubmit.py), `--wait` exits 1 naming it."""
    waiter = subprocess.Popen(
        [sys.executable, "-m", "polar_hpc", "launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, *HELD,
         "--wait", "--timeout", "300"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: RunDir(run_dir).jobs_path.is_file(), 60, "jobs.json")
        jobs = _jobs(run_dir)
        gateways = [jobs["gateway-0"], jobs["gateway-1"]]
        _wait_for(lambda: all(s == "RUNNING" for s in sacct_states(gateways).values()), 120, "gateways RUNNING")
        subprocess.run(["scancel", gateways[0].split("_")[0], jobs["coordinator-0"]], check=True, timeout=30)
        out, err = waiter.communicate(timeout=120)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
    assert waiter.returncode == 1, out + err
    assert "coordinator ended (CANCELLED) before the run finished" in err, err
    started = time.monotonic()
    out2 = polar("cancel", str(run_dir), timeout=200)
    took = time.monotonic() - started
    assert out2.returncode == 0, out2.stderr
    assert took < 60, f"cancel of a run with nothing to drain took {took:.0f}s"
    _wait_for(lambda: not any(s in ("RUNNING", "PENDING") for s in sacct_states(list(jobs.values())).values()), 60,
              "every job to leave RUNNING/PENDING")
    st = polar("status", str(run_dir))
    assert st.stdout.splitlines()[-1].startswith("cancelled at "), st.stdout
    assert "recent errors" not in st.stdout


@pytest.mark.timeout(700)
def test_cancel_drains_and_commits(run_dir: Path) -> None:
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, "--set", "tasks.num_samples=6",
                "--set", "shards.max_sessions=100")
    assert out.returncode == 0, out.stderr
    status_path = RunDir(run_dir).status_path

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
    assert out.stdout == f"cancelled {run_dir}: {len(keys)} sessions committed in " \
                         f"{len(list(RunDir(run_dir).shards.glob('*.h5')))} shard(s)\n"
    assert not list(RunDir(run_dir).shards.glob("*.tmp")), "a shard was left half-written"
    val = polar("shards", "validate", str(RunDir(run_dir).shards))
    assert val.returncode == 0, val.stdout
    assert all(s != "FAILED" for s in sacct_states(list(jobs.values())).values()), "a cancel is not a failure"


@pytest.mark.timeout(1200)
def test_preempted_gateway_checkpoints_through_submitit_returns_and_rejoins(run_dir: Path) -> None:
    """The real path: USR2 (what ``--signal=USR2@N`` and a preemption deliver) -> submitit's handler ->
    ComponentJob.checkpoint() (drain, commit) -> submitit requeues -> the rank comes back and registers again."""
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), *SLURM_SETS, "--set", "tasks.num_samples=4",
                "--set", "gateway.drain_grace_s=10")
    assert out.returncode == 0, out.stderr
    jobs = _jobs(run_dir)
    victim = jobs["gateway-1"]

    def victim_busy() -> bool:
        status = RunDir(run_dir).read_status()
        return status is not None and any(r.rank == 1 and r.alive and r.in_flight > 0 for r in status.ranks)

    _wait_for(victim_busy, 300, "gateway-1 holding sessions")
    subprocess.run(["scancel", "--signal=USR2", victim], check=True, timeout=30)
    _wait_for(lambda: sacct_states([victim]).get(victim) == "PENDING", 180, f"{victim} requeued by submitit")
    coordinator_log = lambda: _logs(run_dir, "coordinator", jobs["coordinator-0"])  # noqa: E731
    released = [time.monotonic() - 10.0]  # the first start 5 s after the requeue

    def returned() -> bool:
        start_if_held(victim, released)
        return coordinator_log().count("gateway rank 1 registered") >= 2

    try:
        _wait_for(returned, 300, "gateway-1 to come back and register again")
    except BaseException:
        print("victim:", sacct_states([victim]), _logs(run_dir, "gateway", victim)[-3000:])
        raise
    assert wait_run(RunDir(run_dir), timeout_s=400) == 0
    victim_log = _logs(run_dir, "gateway", victim)
    assert "Caught signal SIGUSR2" in victim_log and "Calling checkpoint method" in victim_log, victim_log[-3000:]
    # the checkpoint drained the rank (SIGTERM), which committed or released what it held, before the requeue
    hit = victim_log.index("Calling checkpoint method")
    assert victim_log.index("rank 1: signal received, draining", hit) < victim_log.index("Requeued job", hit)
    keys, dups = committed_keys(run_dir)
    assert sorted(keys) == sorted(_expected(4))
    assert dups == 0
