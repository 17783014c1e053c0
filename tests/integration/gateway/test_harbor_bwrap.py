"""Harbor-format tasks of our own in bwrap, where the task allows it (each fixture's Dockerfile only starts FROM
the project's base image and copies files of its build context): `tasks import harbor` → a gateway rank running pi
in a bwrap sandbox per session, with the task's workdir, copied files, /tests and /logs as folders of the session's
own → graded by the task's own tests/test.sh and the reward file it writes. Gold 1 on every task (word-count's
solve.sh calls a second file of its solution/), no-op 0. Nothing is built: no podman here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from polar_hpc.config import dump_config, load_recipe
from polar_hpc.config.run import AgentSpec, GatewayConfig, InferenceConfig, TaskSource
from polar_hpc.store.reader import ShardReader
from tests.fixtures.gateway_runs import run_gateway, server_url

pytestmark = [pytest.mark.slow, pytest.mark.harness]
REPO = Path(__file__).resolve().parents[3]
TASKS = REPO / "tests" / "fixtures" / "harbor"
NAMES = ["csv-total", "fix-sum", "hello-file", "word-count"]


@pytest.fixture(scope="module")
def harbor_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap is not installed (apt-get install bubblewrap); this test needs it", pytrace=False)
    out = tmp_path_factory.mktemp("harbor") / "tasks.jsonl"
    done = subprocess.run([sys.executable, "-m", "polar_hpc", "tasks", "import", "harbor", str(TASKS), "--out",
                           str(out)], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return out


def run(tmp: Path, tasks: Path, policy: str, url: str, model_dir: Path) -> list[Any]:
    cfg = load_recipe(REPO / "recipes" / "harbor-bwrap.toml")
    cfg = msgspec.structs.replace(
        cfg,
        inference=InferenceConfig(engine="external", endpoints=[url], model=str(model_dir), served_model_name="policy",
                                  context_length=32768, max_new_tokens=48, request_timeout_s=60),
        gateway=GatewayConfig(init_pool=2, ready_buffer=2, run_pool=2, postrun_pool=2, start_gate=2,
                              agent_timeout_s=150, session_timeout_s=300, drain_grace_s=20),
        agent=AgentSpec(harness="pi", max_turns=8, policy=policy),  # type: ignore[arg-type]
        tasks=TaskSource(path=str(tasks), num_samples=1, template=cfg.tasks.template),
    )
    tmp.mkdir()
    config = tmp / "config.toml"
    config.write_text(dump_config(cfg))
    done = run_gateway(config, tmp / "run", timeout_s=300)
    assert done.returncode == 0, done.stdout[-4000:]
    results = sorted(ShardReader([tmp / "run"]).results(None), key=lambda r: r.task_id)
    assert [r.task_id for r in results] == NAMES, done.stdout[-3000:]
    return results


def test_gold_one_and_noop_zero_in_bwrap(harbor_tasks: Path, tmp_path: Path, reference_server: Any,
                                        tiny_qwen3_dir: Path, no_leaked_children: None) -> None:
    url = server_url(reference_server)
    for r in run(tmp_path / "gold", harbor_tasks, "oracle", url, tiny_qwen3_dir):
        why = json.dumps({"evaluation": msgspec.to_builtins(r.evaluation), "agent": msgspec.to_builtins(r.agent)},
                         default=str)[-3000:]
        assert r.harness == "pi" and r.trajectory.traces, why
        assert r.evaluation is not None and r.evaluation.outcome_reward == 1.0, why
        assert r.evaluation.details["returncode"] == 0, why
    for r in run(tmp_path / "noop", harbor_tasks, "oracle_noop", url, tiny_qwen3_dir):
        why = json.dumps(msgspec.to_builtins(r.evaluation), default=str)[-2000:]
        assert r.evaluation is not None and r.evaluation.outcome_reward == 0.0, why
        assert "reason" not in r.evaluation.details, why  # graded by the tests, not an evaluation error
