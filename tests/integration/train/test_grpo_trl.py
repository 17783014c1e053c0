"""GRPO with TRL through the real stack on tiny-qwen3: a launched local run (reference server, coordinator, a
gateway rank with bubblewrap sandboxes running the recipe's one-call openai-SDK client), two synchronous steps.

The addition task's reward is always 0 for a random model, so the evaluator here rewards an even-length reply
(about half the samples): advantages are non-zero and the weights must move."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import msgspec
import pytest

from polar_hpc.config import load_recipe
from polar_hpc.tasks.source import iter_tasks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
torch = pytest.importorskip("torch", reason="the train extra (torch, trl) is not installed")

ROOT = Path(__file__).parents[3]
RECIPE = ROOT / "recipes" / "local-grpo.toml"
TINY = ["inference.model=asset:tiny-qwen3", "trainer.steps=2", "trainer.groups_per_step=2", "tasks.num_samples=4",
        "trainer.max_off_policy_steps=0", "trainer.learning_rate=1e-3", "trainer.threads=1"]
EVEN_REPLY = ("python3 -c 'import json, sys; r = json.load(open(\"reply.json\")); "
              "sys.exit(len(r[\"choices\"][0][\"message\"][\"content\"] or \"\") % 2)'")
LOGP_TOL = 1e-4
"""nat: trainer vs reference server under the same float32 weights (KV-cached incremental vs one full forward;
measured here: max 2e-6)."""


def test_two_grpo_steps_through_the_real_stack(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from polar_hpc.launch.monitor import cancel_run
    from polar_hpc.store.reader import ShardReader
    from polar_hpc.train.grpo.launched import launch_run, wait_until_up
    from polar_hpc.train.grpo.metrics import CHECKPOINTS, read_steps
    from polar_hpc.train.grpo.offline import ShardRollouts, replay_trainer
    from polar_hpc.train.grpo.run import check_recipe, load_policy, train_grpo, trainer_model_dir
    from polar_hpc.wire.endpoints import read_endpoint
    from polar_hpc.wire.security import run_api_key
    from tests.integration.launch.helpers import stop_run

    cfg = load_recipe(RECIPE, TINY)
    cfg = msgspec.structs.replace(cfg, evaluator=msgspec.structs.replace(cfg.evaluator, command=EVEN_REPLY))
    tasks = list(iter_tasks(cfg))
    check_recipe(cfg, tasks)
    model_dir = trainer_model_dir(cfg)
    model, tok = load_policy(model_dir)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    run = launch_run(cfg, str(tmp_path / "run"))
    try:
        wait_until_up(run.root, cfg)
        trainer = train_grpo(cfg, run.root, tasks, model=model, tokenizer=tok, model_dir=model_dir)
        ep = read_endpoint(run.root, "inference-0")
        assert ep is not None
        req = urllib.request.Request(f"{ep.url}/get_weight_version",
                                     headers={"Authorization": f"Bearer {run_api_key(run.root)}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            served = json.load(resp)["weight_version"]
        cancel_run(run)  # commits the shards
    finally:
        stop_run(run.root)

    steps = read_steps(run.root)
    assert [s.step for s in steps] == [1, 2] and served == "2"
    # synchronous: step 1 sampled the initial weights, step 2 the weights pushed after step 1 (and the last
    # checkpoint is loaded when training ends: served == "2")
    assert steps[0].rollout_versions == ["default"] and steps[1].rollout_versions == ["1"]
    assert [s.pushed_version for s in steps] == [0, 1] and all(s.temperatures == [1.0] for s in steps)
    assert all(s.counts.trained == 8 and s.counts.sessions == 8 for s in steps), steps
    # the trainer's logprobs of the sampled tokens equal the engine's under the same weights (float noise)
    assert all(s.logp_diff_max < LOGP_TOL for s in steps), [(s.logp_diff_mean, s.logp_diff_max) for s in steps]
    assert all(s.clipped_share == 0.0 for s in steps)

    params = model.state_dict()
    assert [k for k, v in params.items() if not torch.equal(v, before[k])], "no parameter changed"
    saved = load_file(str(run.root / CHECKPOINTS / "step-2" / "model.safetensors"))
    assert saved and all(torch.equal(saved[k], params[k]) for k in saved)  # the pushed weights are the trained ones

    # what TRL got as env_mask is the loss mask the run recorded, token for token
    recorded = {(r.group.group_id, r.sample_index): r for r in ShardReader(run.root).results()}
    rows = trainer.rollout_func.last.rows
    assert len(rows) == 8 and not any(r.placeholder for r in rows)
    for row in rows:
        (tr,) = recorded[(row.group_id, row.sample_index)].trajectory.traces
        assert row.env_mask == tr.loss_mask.tolist() and row.completion_ids == tr.response_ids.tolist()
        assert row.prompt_ids == tr.prompt_ids.tolist() and row.weight_versions == ["1"]

    # offline: replay the step-1 groups from the shards under the initial weights: the same figure
    base, _ = load_policy(model_dir)
    replay = ShardRollouts([run.root], num_generations=4, filler_id=int(tok.pad_token_id))
    assert len(replay.group_ids) == 4
    rt = replay_trainer(replay, base, tok, cfg.trainer, output_dir=tmp_path / "replay", steps=1)
    rt.train()
    assert rt.last_tis is not None and rt.last_tis.logp_diff_max < LOGP_TOL and rt.last_tis.tokens > 0
    assert {r.weight_versions[0] for r in replay.last.rows} == {"default"}


@pytest.mark.timeout(120)
def test_an_engine_refusing_the_weight_update_stops_at_that_step_and_keeps_the_checkpoint(tmp_path: Path) -> None:
    import asyncio
    import time
    from types import SimpleNamespace

    from polar_hpc.assets import asset_path
    from polar_hpc.reference.options import ReferenceOptions
    from polar_hpc.reference.process import start_reference_server
    from polar_hpc.train.async_client import AsyncRollouts
    from polar_hpc.train.grpo.metrics import CHECKPOINTS
    from polar_hpc.train.grpo.run import load_policy
    from polar_hpc.train.grpo.weights import PushWeights, StagedWeights, WeightPushError
    from polar_hpc.wire.endpoints import Endpoint, write_endpoint

    model, _ = load_policy(asset_path("tiny-qwen3"))
    run_dir = tmp_path / "run"
    # the server requires a key this run dir does not hold: it refuses every weight update (401)
    with start_reference_server(asset_path("tiny-qwen3"), ReferenceOptions(threads=1), api_key="not-this-run",
                                log_path=tmp_path / "ref.log") as ref:
        write_endpoint(run_dir, Endpoint(name="inference-0", url=ref.url, pid=ref.pid, host="127.0.0.1",
                                         started_at=time.time(), kind="reference"))
        weights = StagedWeights(lambda p, v: asyncio.run(AsyncRollouts(run_dir).update_policy(p, v)))
        rollouts = SimpleNamespace(run_dir=run_dir, weights=weights, last=None)
        save = PushWeights(rollouts, None, base_model=asset_path("tiny-qwen3"), keep=2)  # type: ignore[arg-type]
        save.on_step_end(None, SimpleNamespace(global_step=3), None, model=model)  # saved and staged, not loaded
        with pytest.raises(WeightPushError) as err:
            weights.push()  # what the next rollout call does, once no group is generating
    ckpt = run_dir / CHECKPOINTS / "step-3"
    assert str(err.value).startswith(f"step 3: the engines did not load {ckpt} (kept on disk): ")
    assert "\n" not in str(err.value) and (ckpt / "model.safetensors").is_file()
    assert save.saved == 3 and weights.served == 0 and weights.pending
