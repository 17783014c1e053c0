"""The inference job body for real: reference server started, health-waited, published, stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from polar_hpc.config import RunConfig, dump_config
from polar_hpc.config.run import InferenceConfig
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.util.readiness import http_status, stop_process
from polar_hpc.wire.calls import SamplingParams
from polar_hpc.wire.endpoints import endpoint_path, wait_endpoints
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.waits import wait_for

pytestmark = pytest.mark.slow


def start_job(run_dir: Path, inference: InferenceConfig, index: int = 0) -> subprocess.Popen[bytes]:
    cfg = RunConfig(name="t", inference=inference)
    RunDir(run_dir).config_path.write_text(dump_config(cfg))
    env = {**os.environ, "POLAR_HPC_ADVERTISE_HOST": "127.0.0.1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "polar_hpc", "serve-inference", "--run-dir", str(run_dir), "--index", str(index)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


async def test_publish_serve_and_stop(tmp_path: Path) -> None:
    RunDir(tmp_path).secrets.mkdir()
    RunDir(tmp_path).run_token_path.write_text("the-run-token")
    job = start_job(tmp_path, InferenceConfig(engine="reference", model="asset:tiny-qwen3", context_length=2048,
                                              startup_timeout_s=120, extra_args=["--threads", "1"]), index=3)
    try:
        (ep,) = wait_endpoints(tmp_path, ["inference-3"], timeout_s=120)
        assert ep.url.startswith("http://127.0.0.1:") and ep.kind == "reference" and ep.pid != job.pid
        assert Path(ep.log_path or "").is_file()
        assert http_status(ep.url + "/model_info", 5.0)[0] == 401  # the server requires the run token
        async with SGLangEngine([ep.url], EngineSettings(context_length=2048), api_key="the-run-token") as engine:
            res = await engine.generate([1, 2, 3], SamplingParams(max_new_tokens=3))
            info = await engine.model_info()
        assert res.completion_tokens == 3 and info.context_length == 2048 and info.served_model_name == "policy"
        job.send_signal(signal.SIGTERM)
        out, _ = job.communicate(timeout=60)
        assert job.returncode == 0, out.decode()
        assert not endpoint_path(tmp_path, "inference-3").exists()
        wait_for(lambda: http_status(ep.url + "/health", 1.0)[0] is None, 10, "the server to go down with the job",
                 interval_s=0.2)
        assert http_status(ep.url + "/health", 1.0)[0] is None  # the server went down with the job
    finally:
        stop_process(job)


def test_failed_start_names_what_it_waited_for(tmp_path: Path) -> None:
    broken = tmp_path / "not-a-model"
    broken.mkdir()
    job = start_job(tmp_path, InferenceConfig(engine="reference", model=str(broken), startup_timeout_s=60))
    try:
        out, _ = job.communicate(timeout=120)
    finally:
        stop_process(job)
    text = out.decode()
    assert job.returncode != 0
    assert "/health_generate" in text and "exited with status" in text and "inference-0-node0.log" in text
    assert "config.json" in text  # the server's own error, from the log tail
    assert not endpoint_path(tmp_path, "inference-0").exists()


async def test_a_restarted_server_serves_the_trainers_newest_weights(tmp_path: Path) -> None:
    """A server whose job was requeued (or restarted in place) under a trainer loads ``policy.json`` before it
    publishes its endpoint: found on 2026-12-06, when a GRPO run's server came back at its time limit with the
    recipe's weights. A policy it cannot load fails the start, naming it."""
    import json
    import urllib.request

    from polar_hpc.assets import resolve_model
    from polar_hpc.wire.rundir import PolicyRecord

    run = RunDir(tmp_path)
    run.secrets.mkdir()
    run.run_token_path.write_text("the-run-token")
    run.write_policy(PolicyRecord(path=str(resolve_model("asset:tiny-qwen3")), version="7"))
    inference = InferenceConfig(engine="reference", model="asset:tiny-qwen3", context_length=2048,
                                startup_timeout_s=120, extra_args=["--threads", "1"])
    job = start_job(tmp_path, inference)
    try:
        (ep,) = wait_endpoints(tmp_path, ["inference-0"], timeout_s=120)
        ask = urllib.request.Request(ep.url + "/get_weight_version",
                                     headers={"Authorization": "Bearer the-run-token"})
        with urllib.request.urlopen(ask, timeout=10) as reply:
            assert json.load(reply)["weight_version"] == "7"
    finally:
        stop_process(job)
    run.write_policy(PolicyRecord(path=str(tmp_path / "no-such-checkpoint"), version="8"))
    job = start_job(tmp_path, inference)
    try:
        out, _ = job.communicate(timeout=120)
    finally:
        stop_process(job)
    assert job.returncode != 0 and "newest weights (version 8" in out.decode() and "no-such-checkpoint" in out.decode()
    assert not endpoint_path(tmp_path, "inference-0").exists()
