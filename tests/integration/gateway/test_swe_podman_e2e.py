"""End to end on the offline real-repo SWE task set: a gateway rank runs real harness CLIs in per-instance podman
containers (network none, the proxy through its Unix socket) and grades each session with the `swebench`
evaluator in a fresh container, exactly as the official harness. Under the oracle policy the harness applies the
gold patch through its own shell tool and every session must be resolved; with the tiny random model sampling,
no fix comes, and what is checked is that every stage ran for real and the grade was given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.config import dump_config, load_recipe
from polar_hpc.config.run import AgentSpec, GatewayConfig, InferenceConfig, TaskSource
from polar_hpc.harness import get_adapter
from polar_hpc.store.reader import ShardReader
from tests.fixtures.gateway_runs import run_gateway, server_url
from tests.fixtures.podman_binds import harness_binds

REPO = Path(__file__).resolve().parents[3]




def make_config(tmp: Path, harness: str, url: str, model_dir: Path, tasks: list[dict[str, Any]],
                policy: str) -> Path:
    task_file = tmp / "tasks.jsonl"
    task_file.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    cfg = load_recipe(REPO / "recipes" / "swe-offline-podman.toml")
    binds, env = harness_binds(tmp, get_adapter(harness).binary)
    import msgspec

    cfg = msgspec.structs.replace(
        cfg,
        inference=InferenceConfig(engine="external", endpoints=[url], model=str(model_dir), served_model_name="policy",
                                  context_length=32768, max_new_tokens=48, request_timeout_s=60),
        gateway=GatewayConfig(init_pool=1, ready_buffer=1, run_pool=1, postrun_pool=1, start_gate=1,
                              agent_timeout_s=150, session_timeout_s=400, drain_grace_s=20),
        runtime=msgspec.structs.replace(cfg.runtime, binds=binds, env=env),
        agent=AgentSpec(harness=harness, max_turns=8, policy=policy),  # type: ignore[arg-type]
        tasks=TaskSource(path=str(task_file), num_samples=1, template=cfg.tasks.template),
    )
    out = tmp / "config.toml"
    out.write_text(dump_config(cfg))
    return out


@pytest.mark.container
@pytest.mark.harness
@pytest.mark.slow
@pytest.mark.parametrize(("harness", "policy"), [("pi", "oracle"), ("gemini_cli", "oracle")])
def test_real_harness_on_real_repo_in_podman(harness: str, policy: str, tmp_path: Path, reference_server: Any,
                                             tiny_qwen3_dir: Path, offline_swe_tasks: list[dict[str, Any]],
                                             no_leaked_children: None) -> None:
    from tests.fixtures.containers import container_leftovers

    task = next(t for t in offline_swe_tasks if t["instance_id"] == "pytoolz__toolz-2")
    config = make_config(tmp_path, harness, server_url(reference_server), tiny_qwen3_dir, [task], policy)
    run_dir = tmp_path / "run"
    done = run_gateway(config, run_dir, timeout_s=500)
    assert done.returncode == 0, done.stdout[-4000:]
    results = list(ShardReader([run_dir]).results(None))
    assert [r.key for r in results] == ["pytoolz__toolz-2/0"], done.stdout[-3000:]
    r = results[0]
    why = json.dumps(r.metadata, default=str)[-3000:] + done.stdout[-2000:]
    assert r.harness == harness and r.trajectory.traces, f"no model call reached the proxy: {why}"
    assert r.evaluation is not None, why
    details = r.evaluation.details
    assert details["instance_id"] == "pytoolz__toolz-2"
    if policy == "oracle":  # the harness applied the gold patch through its own tool: resolved, officially graded
        assert r.evaluation.outcome_reward == 1.0 and details["resolved"], why
        assert details["grader"] == "swebench 4.1.0" and details["failed_tests"] == [], why
    else:  # no fix from the tiny model (empty patch), or a patch the official grading rejected
        assert details.get("reason") == "empty_patch" or details.get("grader") == "swebench 4.1.0", why
    from polar_hpc.runtime.naming import owner_tag

    assert container_leftovers("podman", f"polar-hpc.owner={owner_tag(run_dir, 0)}") == []  # this run's only
