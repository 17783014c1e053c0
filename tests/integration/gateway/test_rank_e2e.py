"""End to end: a gateway rank process runs the shell harness in bwrap sandboxes against the reference server,
with the engine sampling (the real harness CLIs run under the oracle policy: test_oracle_harnesses.py).

``polar-hpc gateway --tasks`` takes a tiny git-repo task (a failing test), runs the harness behind the rank's
proxy, builds the trajectory, grades it with the ``command`` evaluator and commits it to a shard that
``polar-hpc shards validate`` accepts. The tiny random-init Qwen3 writes nonsense, so the run ends by the
harness giving up, max turns or the agent budget; what matters is that it ends and everything downstream holds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from polar_hpc.store.reader import ShardReader
from polar_hpc.wire.rundir import SESSIONS, RunDir
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.gateway_runs import REPO, make_recipe, run_gateway, server_url


def check_run(run_dir: Path, harness: str, samples: int, output: str) -> None:
    validate = subprocess.run([sys.executable, "-m", "polar_hpc", "shards", "validate", str(RunDir(run_dir).shards)],
                              capture_output=True, text=True, timeout=120, cwd=REPO)
    assert validate.returncode == 0, f"shards validate failed:\n{validate.stdout}\n{validate.stderr}"
    results = sorted(ShardReader([run_dir]).results(None), key=lambda r: r.sample_index)
    assert [r.key for r in results] == [f"calc-add/{i}" for i in range(samples)], output[-3000:]
    for r in results:
        why = f"{harness} session {r.key}: {msgspec.json.encode(r.metadata).decode()[-2500:]}\n{output[-2000:]}"
        assert r.harness == harness
        assert r.trajectory.traces, f"no model call reached the proxy; {why}"
        agent = r.agent
        assert agent is not None
        # The tiny random model's replies are noise cut at max_new_tokens; a harness may then give up on its own
        # (Claude Code exits 1 on a length stop). That still ends the run, after real model calls were answered;
        # a harness that fails before its first model call is caught by the assertion above.
        ended_itself = agent.status == "failed" and agent.detail.startswith("harness exited")
        assert agent.status in ("completed", "timeout") or ended_itself, why
        assert r.evaluation is not None, why
        expected = {TraceStatus.COMPLETED, TraceStatus.TIMEOUT} | ({TraceStatus.ERROR} if ended_itself else set())
        assert r.trajectory.status in expected, why
        assert {"init", "run", "build", "evaluate", "teardown"} <= r.timings.keys()
        for tr in r.trajectory.traces:
            assert len(tr.loss_mask) == len(tr.response_ids) == len(tr.response_logprobs)
    sessions = RunDir(run_dir).root / SESSIONS
    left = [p for p in sessions.rglob("*") if p.is_dir() and p.parent.name.startswith("rank-")]
    assert not left, f"session dirs outlived their sessions: {left}"


@pytest.fixture
def e2e_model(tiny_qwen3_dir: Path) -> Path:
    return tiny_qwen3_dir


def _needs_bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap is not installed (apt-get install bubblewrap); the gateway e2e needs it")


@pytest.mark.slow
@pytest.mark.timeout(480)  # run_gateway's own deadline is 400 s
def test_shell_harness_end_to_end(tmp_path: Path, reference_server: Any, e2e_model: Path,
                                  no_leaked_children: None) -> None:
    _needs_bwrap()
    config = make_recipe(tmp_path, "shell", server_url(reference_server), e2e_model, samples=2)
    run_dir = tmp_path / "run"
    done = run_gateway(config, run_dir, timeout_s=400)
    assert done.returncode == 0, done.stdout[-4000:]
    check_run(run_dir, "shell", 2, done.stdout)


def test_gateway_cli_refuses_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[gateway]\nrun_pools = 2\n")
    done = subprocess.run([sys.executable, "-m", "polar_hpc", "gateway", "--config", str(bad), "--run-dir",
                           str(tmp_path / "run")], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={**os.environ})
    assert done.returncode == 2 and "run_pools" in done.stderr and "run_pool" in done.stderr
