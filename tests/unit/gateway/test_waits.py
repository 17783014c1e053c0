"""Waits that see the jobs they wait for (here the local backend's controllers, real processes; the same code reads
Slurm states, tested on the real cluster in tests/integration/launch/test_slurm_waits.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from polar_hpc.config import RunConfig, dump_config
from polar_hpc.gateway.waits import JobWatch, WaitFailed, wait_for_endpoints
from polar_hpc.util.proc import start_time
from polar_hpc.wire.endpoints import Endpoint, write_endpoint
from polar_hpc.wire.rundir import JobRecord, JobsFile, RunDir
from polar_hpc.wire.waits import read_waits
from tests.fixtures.waits import async_wait_for, wait_for

ROOT = Path(__file__).parents[3]


def _ledger(run_dir: Path, pid: int) -> None:
    RunDir(run_dir).write_jobs(JobsFile(backend="local", jobs=[JobRecord(
        component="inference", index=0, job_id=str(pid), backend="local", folder=str(run_dir), submitted_at=0.0,
        pid_start=start_time(pid))]))


def _publish(run_dir: Path, name: str) -> None:
    write_endpoint(run_dir, Endpoint(name=name, url="http://127.0.0.1:1", pid=os.getpid(), host="h",
                                     started_at=time.time()))


async def test_waits_reporting_then_returns_when_published(tmp_path: Path) -> None:
    job = subprocess.Popen(["sleep", "60"])
    try:
        _ledger(tmp_path, job.pid)
        waiting = asyncio.create_task(wait_for_endpoints(tmp_path, ["inference-0"], me="gateway-0", timeout_s=30,
                                                         watch=JobWatch(tmp_path, state_poll_s=0.05), poll_s=0.02))
        await async_wait_for(lambda: "gateway-0" in read_waits(tmp_path), 4.0, "the wait record of gateway-0")
        rec = read_waits(tmp_path)["gateway-0"]
        assert rec.waiting_for == ["inference-0"]
        assert rec.detail.startswith(f"waiting for inference-0: job {job.pid} RUNNING, ")
        _publish(tmp_path, "inference-0")
        (ep,) = await asyncio.wait_for(waiting, 5)
        assert ep.name == "inference-0"
        assert read_waits(tmp_path) == {}
    finally:
        job.kill()
        job.wait()


async def test_fails_fast_naming_the_job_that_ended(tmp_path: Path) -> None:
    job = subprocess.Popen(["sleep", "60"])
    _ledger(tmp_path, job.pid)
    job.kill()
    job.wait()
    with pytest.raises(WaitFailed) as info:
        await asyncio.wait_for(wait_for_endpoints(tmp_path, ["inference-0"], me="gateway-0", timeout_s=600,
                                                  watch=JobWatch(tmp_path, state_poll_s=0.05), poll_s=0.02), 10)
    assert str(info.value) == (f"gateway-0: inference-0: job {job.pid} ENDED before publishing its endpoint; gave "
                               f"up waiting for inference-0 (see its log under {tmp_path / 'logs'})")
    assert read_waits(tmp_path) == {}


async def test_deadline_names_what_it_last_saw_and_partial_goes_on(tmp_path: Path) -> None:
    with pytest.raises(WaitFailed) as info:
        await wait_for_endpoints(tmp_path, ["coordinator"], me="gateway-1", timeout_s=0.1, poll_s=0.02)
    assert str(info.value).startswith("gateway-1: waited 0 s for coordinator in ")
    assert str(info.value).endswith("(0 s of it not queued); last seen: coordinator: job state unknown")
    _publish(tmp_path, "inference-1")
    eps = await wait_for_endpoints(tmp_path, ["inference-0", "inference-1"], me="g", timeout_s=0.1, poll_s=0.02,
                                   min_found=1)
    assert [e.name for e in eps] == ["inference-1"]


def test_gateway_honours_sigterm_while_waiting_for_inference(tmp_path: Path) -> None:
    """A rank still waiting for its engine endpoints exits at once on SIGTERM (not after the whole cancel grace)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    cfg = RunConfig(recipe_dir=str(tmp_path))
    run = RunDir(run_dir)
    run.config_path.write_text(dump_config(cfg))
    run.secrets.mkdir()
    run.run_token_path.write_text("t")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    gw = subprocess.Popen([sys.executable, "-m", "polar_hpc", "gateway", "--config", str(run.config_path),
                           "--run-dir", str(run_dir)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "gateway-0" in read_waits(run_dir) or gw.poll() is not None, 60,
                 "the gateway's wait record (or its exit)", interval_s=0.1)
        assert "gateway-0" in read_waits(run_dir), gw.stdout.read() if gw.poll() is not None else "no wait record"  # type: ignore[union-attr]
        gw.send_signal(signal.SIGTERM)
        assert gw.wait(timeout=15) == 143
        out = gw.stdout.read().decode()  # type: ignore[union-attr]
        assert "gateway-0 waiting for inference-0: job state unknown" in out
        assert "signal received while starting" in out and "Traceback" not in out
        assert read_waits(run_dir) == {}
    finally:
        if gw.poll() is None:
            gw.kill()
            gw.wait()


def test_a_paused_rank_names_its_servers_jobs_and_which_resume_brings_back(tmp_path: Path) -> None:
    from polar_hpc.config import load_recipe
    from polar_hpc.gateway.rank import GatewayRank

    live, ended = subprocess.Popen(["sleep", "60"]), subprocess.Popen(["true"])
    try:
        ended.wait(timeout=10)
        RunDir(tmp_path).write_jobs(JobsFile(backend="local", jobs=[
            JobRecord(component="inference", index=i, job_id=str(p.pid), backend="local", folder=str(tmp_path),
                      submitted_at=0.0, pid_start=start if (start := start_time(p.pid)) else 1)
            for i, p in enumerate((live, ended))]))
        rank = GatewayRank(load_recipe(ROOT / "recipes" / "local-demo.toml"), 0, tmp_path)
        said = rank._server_jobs(JobWatch(tmp_path), ["inference-0", "inference-1", "inference-2"])
        assert said == (f"inference-0: job {live.pid} RUNNING; inference-1: job {ended.pid} ENDED, "
                        f"polar-hpc resume {tmp_path} submits it again; ")
    finally:
        live.kill()
        live.wait()
