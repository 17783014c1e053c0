"""Harbor-format tasks of our own, end to end in podman: `tasks import harbor` → `images prepare` (each task's
own Dockerfile) → a gateway rank running a real harness CLI in each task's container under the oracle (the
task's solve.sh through the harness's own shell tool) → graded by the task's own tests/test.sh and the reward file
it writes. Gold: reward 1 on every task, through two harnesses; no-op: 0. A Dockerfile whose base image cannot be
pulled here fails its build naming the base."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from polar_hpc.config import dump_config, load_recipe
from polar_hpc.config.run import AgentSpec, GatewayConfig, InferenceConfig, TaskSource
from polar_hpc.harness import get_adapter
from polar_hpc.store.reader import ShardReader
from tests.fixtures.gateway_runs import run_gateway, server_url
from tests.fixtures.podman_binds import harness_binds

pytestmark = [pytest.mark.container, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[3]
TASKS = REPO / "tests" / "fixtures" / "harbor"
NAMES = ["csv-total", "fix-sum", "hello-file", "word-count"]


def polar(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "polar_hpc", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def harbor_tasks(podman_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("harbor") / "tasks.jsonl"
    done = polar("tasks", "import", "harbor", str(TASKS), "--out", str(out))
    assert done.returncode == 0, done.stderr
    done = polar("images", "prepare", str(out), "--engine", "podman", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def run(tmp: Path, tasks: Path, harness: str, policy: str, url: str, model_dir: Path) -> list[Any]:
    cfg = load_recipe(REPO / "recipes" / "harbor-podman.toml")
    binds, env = harness_binds(tmp, get_adapter(harness).binary)
    cfg = msgspec.structs.replace(
        cfg,
        inference=InferenceConfig(engine="external", endpoints=[url], model=str(model_dir), served_model_name="policy",
                                  context_length=32768, max_new_tokens=48, request_timeout_s=60),
        gateway=GatewayConfig(init_pool=2, ready_buffer=1, run_pool=2, postrun_pool=2, start_gate=2,
                              agent_timeout_s=150, session_timeout_s=400, drain_grace_s=20),
        runtime=msgspec.structs.replace(cfg.runtime, binds=binds, env=env, prepare=[]),
        agent=AgentSpec(harness=harness, max_turns=8, policy=policy),  # type: ignore[arg-type]
        tasks=TaskSource(path=str(tasks), num_samples=1, template=cfg.tasks.template),
    )
    config = tmp / "config.toml"
    config.write_text(dump_config(cfg))
    done = run_gateway(config, tmp / "run", timeout_s=600)
    assert done.returncode == 0, done.stdout[-4000:]
    results = sorted(ShardReader([tmp / "run"]).results(None), key=lambda r: r.task_id)
    assert [r.task_id for r in results] == NAMES, done.stdout[-3000:]
    return results


@pytest.mark.harness
@pytest.mark.parametrize("harness", ["pi", "gemini_cli"])
def test_gold_solutions_grade_one_through_the_harness(harness: str, harbor_tasks: Path, tmp_path: Path,
                                                      reference_server: Any, tiny_qwen3_dir: Path,
                                                      no_leaked_children: None) -> None:
    for r in run(tmp_path, harbor_tasks, harness, "oracle", server_url(reference_server), tiny_qwen3_dir):
        why = json.dumps({"evaluation": msgspec.to_builtins(r.evaluation), "agent": msgspec.to_builtins(r.agent)},
                         default=str)[-3000:]
        assert r.harness == harness and r.trajectory.traces, why
        assert r.evaluation is not None and r.evaluation.outcome_reward == 1.0, why
        assert r.evaluation.details["returncode"] == 0, why


@pytest.mark.harness
def test_noop_grades_zero(harbor_tasks: Path, tmp_path: Path, reference_server: Any, tiny_qwen3_dir: Path,
                          no_leaked_children: None) -> None:
    for r in run(tmp_path, harbor_tasks, "pi", "oracle_noop", server_url(reference_server), tiny_qwen3_dir):
        why = json.dumps(msgspec.to_builtins(r.evaluation), default=str)[-2000:]
        assert r.evaluation is not None and r.evaluation.outcome_reward == 0.0, why
        assert "reason" not in r.evaluation.details, why  # graded by the tests, not an evaluation error


def test_a_base_image_that_cannot_be_pulled_is_named(podman_image: str, tmp_path: Path) -> None:
    import shutil

    task = tmp_path / "tasks" / "needs-python"
    shutil.copytree(TASKS / "hello-file", task)
    (task / "environment" / "Dockerfile").write_text("FROM docker.io/library/python:3.11-slim\nWORKDIR /app\n")
    out = tmp_path / "tasks.jsonl"
    assert polar("tasks", "import", "harbor", str(task), "--out", str(out)).returncode == 0
    done = polar("images", "prepare", str(out), "--engine", "podman", "--yes")
    assert done.returncode != 0
    assert (f"base image docker.io/library/python:3.11-slim of {task / 'environment' / 'Dockerfile'} is not in "
            "podman's storage and could not be pulled") in done.stdout + done.stderr


def test_a_dockerfile_that_does_not_build_is_one_line_naming_the_task(podman_image: str, tmp_path: Path) -> None:
    import shutil

    task = tmp_path / "tasks" / "broken-run"
    shutil.copytree(TASKS / "hello-file", task)
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text("FROM localhost/polar-hpc/swe-base:bookworm\nRUN exit 3\n")
    out = tmp_path / "tasks.jsonl"
    assert polar("tasks", "import", "harbor", str(task), "--out", str(out)).returncode == 0
    done = polar("images", "prepare", str(out), "--engine", "podman", "--yes")
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed: ")]
    assert done.returncode != 0 and len(failed) == 1, done.stdout + done.stderr
    assert failed[0].startswith("failed: localhost/polar-harbor/broken-run:") and f"(built from {dockerfile})" in \
        failed[0], failed[0]
