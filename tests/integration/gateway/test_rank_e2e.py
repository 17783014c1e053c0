"""End to end: a gateway rank process runs the shell harness in bwrap sandboxes against the reference server,
with the engine sampling (the real harness CLIs run under the oracle policy: test_oracle_harnesses.py).

``polar-hpc gateway --tasks`` takes a tiny git-repo task (a failing test), runs the harness behind the rank's
proxy, builds the trajectory, grades it with the ``command`` evaluator and commits it to a shard that
``polar-hpc shards validate`` accepts. The tiny random-init Qwen3 writes nonsense, so the run ends by the
harness giving up, max turns or the agent budget; what matters is that it ends and everything downstream holds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from polar_hpc.config import dump_config
from polar_hpc.config.run import (
    AgentSpec,
    BuilderSpec,
    EvaluatorSpec,
    GatewayConfig,
    InferenceConfig,
    RunConfig,
    RuntimeSpec,
    ShardConfig,
    TaskSource,
    TaskTemplate,
)
from polar_hpc.store.reader import ShardReader
from polar_hpc.wire.records import TraceStatus
from polar_hpc.wire.rundir import SESSIONS, RunDir
from tests.integration.launch.helpers import stop_run

REPO = Path(__file__).resolve().parents[3]
MINI_AGENT = REPO / "polar_hpc" / "harness" / "mini_agent.py"
SANDBOX_AGENT = "/opt/polar-agent/mini_agent.py"
CALC = {"calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        "test_calc.py": "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
                        "def test_mul():\n    assert mul(2, 3) == 6\n"}

def _server_url(server: Any) -> str:
    for attr in ("url", "base_url"):
        if isinstance(getattr(server, attr, None), str):
            return str(getattr(server, attr))
    assert isinstance(server, str), f"reference_server fixture gave {type(server).__name__}, expected a URL"
    return server


def make_recipe(tmp: Path, harness: str, url: str, model_dir: Path, samples: int) -> Path:
    repo = tmp / "recipe" / "repos" / "calc"
    repo.mkdir(parents=True)
    for name, text in CALC.items():
        (repo / name).write_text(text)
    row = {"task_id": "calc-add", "repo": "calc",
           "problem": "calc.add(2, 3) returns -1 instead of 5. Fix add in calc.py so test_calc.py passes."}
    (tmp / "recipe" / "tasks.jsonl").write_text(json.dumps(row) + "\n")
    path_env = f"{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    agent = (AgentSpec(harness="shell",
                       command=f"python3 {SANDBOX_AGENT} --max-turns 3 --max-tokens 48 {{instruction}}")
             if harness == "shell" else AgentSpec(harness=harness, max_turns=3))
    cfg = RunConfig(
        name=f"e2e-{harness}",
        inference=InferenceConfig(engine="external", endpoints=[url], model=str(model_dir), served_model_name="policy",
                                  context_length=32768, max_new_tokens=48, request_timeout_s=60),
        gateway=GatewayConfig(init_pool=1, ready_buffer=1, run_pool=1, postrun_pool=1, start_gate=1,
                              agent_timeout_s=120, session_timeout_s=200, drain_grace_s=20),
        runtime=RuntimeSpec(
            backend="bwrap",
            prepare=["git init -q . && git add -A && git -c user.email=e2e@polar -c user.name=polar commit -qm base"],
            env={"PATH": path_env},
            binds=[sys.prefix, f"{MINI_AGENT}:{SANDBOX_AGENT}"],
        ),
        agent=agent,
        builder=BuilderSpec(name="prefix_merging"),
        evaluator=EvaluatorSpec(name="command", command="python3 -m pytest -q -p no:cacheprovider test_calc.py",
                                timeout_s=60),
        tasks=TaskSource(path="tasks.jsonl", num_samples=samples,
                         template=TaskTemplate(instruction="{problem}", workspace="repos/{repo}",
                                               metadata_fields=["repo"])),
        shards=ShardConfig(max_sessions=64),
        recipe_dir=str(tmp / "recipe"),
    )
    out = tmp / "config.toml"
    out.write_text(dump_config(cfg))
    return out


def run_gateway(config: Path, run_dir: Path, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """The recipe through ``polar-hpc launch`` on the local backend (the real coordinator and one gateway rank as
    local processes); the output is the launcher's followed by the components' logs."""
    cmd = [sys.executable, "-m", "polar_hpc", "launch", str(config), "--backend", "local", "--run-dir", str(run_dir),
           "--set", "gateway.num_ranks=1", "--wait", "--timeout", str(int(timeout_s))]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    try:
        try:
            out, _ = proc.communicate(timeout=timeout_s + 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate(timeout=30)
            pytest.fail(f"the local run did not finish in {timeout_s:.0f}s; output tail:\n{out[-4000:]}")
    finally:
        stop_run(run_dir)
    logs = "".join(p.read_text(errors="replace") for p in sorted(RunDir(run_dir).logs().rglob("*.out")))
    return subprocess.CompletedProcess(cmd, proc.returncode, out + logs, "")


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
        agent = r.metadata["agent"]
        # The tiny random model's replies are noise cut at max_new_tokens; a harness may then give up on its own
        # (Claude Code exits 1 on a length stop). That still ends the run, after real model calls were answered;
        # a harness that fails before its first model call is caught by the assertion above.
        ended_itself = agent["status"] == "failed" and str(agent.get("detail", "")).startswith("harness exited")
        assert agent["status"] in ("completed", "timeout") or ended_itself, why
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
    config = make_recipe(tmp_path, "shell", _server_url(reference_server), e2e_model, samples=2)
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
