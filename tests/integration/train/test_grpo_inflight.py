"""In-flight weight updates through the real stack (tiny-qwen3 on the reference server, two-call python sessions in
bubblewrap sandboxes, real TRL): two GRPO steps with ``trainer.staleness = "in_flight"``.

Both groups are submitted at once (the pool is ``groups_per_step * (k + 1)`` = 2 groups). The step-0 group's
sessions answer at once; the step-1 group's sessions think ``THINK_S`` between their two calls. The second call
tops the pool up with a step-2 group (the schedule runs ``k`` steps past the last, to keep the pool full); its
sessions think ``LATE_S``, so they are still out when training ends and are cancelled with the run. Step 1 trains on
the first group back (step 0's); its checkpoint is pushed while the slow sessions think, so their second call is
sampled by version 1 and their first by ``default``: step 2 trains on sessions that spanned a push, every
trainable token with the version that sampled it (as the run's records say), counted; lag 1 is within the bound.
The drop / mask decision past the bound: tests/unit/train/test_grpo_inflight.py."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from polar_hpc.config import load_recipe
from polar_hpc.tasks.source import iter_tasks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
pytest.importorskip("torch", reason="the train extra (torch, trl) is not installed")

ROOT = Path(__file__).parents[3]
RECIPE = ROOT / "recipes" / "local-grpo-stragglers.toml"
THINK_S = 12
"""Longer than step 1's training and checkpoint save on tiny-qwen3 (a few seconds on 2 busy cores)."""
LATE_S = 120
"""Longer than the whole test: the step-2 group stays in flight."""
TINY = ["inference.model=asset:tiny-qwen3", "trainer.steps=2", "trainer.groups_per_step=1", "tasks.num_samples=2",
        "trainer.max_off_policy_steps=1", "trainer.staleness=in_flight", "trainer.threads=1",
        "trainer.learning_rate=1e-3"]
SLOW_STEP1 = f'''python3 -c '
import json, os, time, urllib.request
url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
head = {{"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"}}
msgs = [{{"role": "user", "content": os.environ["POLAR_INSTRUCTION"]}}]
for follow in ("Now give only the number.", None):
    body = json.dumps({{"model": os.environ["OPENAI_MODEL"], "max_tokens": 8, "messages": msgs}}).encode()
    reply = json.load(urllib.request.urlopen(urllib.request.Request(url, data=body, headers=head), timeout=100))
    msgs.append({{"role": "assistant", "content": reply["choices"][0]["message"]["content"] or ""}})
    if follow:
        msgs.append({{"role": "user", "content": follow}})
        sid = os.environ["POLAR_SESSION_ID"]
        time.sleep({THINK_S} if "@step1/" in sid else {LATE_S} if "@step2/" in sid else 0)
json.dump(reply, open("reply.json", "w"))
' '''
EVEN_REPLY = ("python3 -c 'import json, sys; r = json.load(open(\"reply.json\")); "
              "sys.exit(len(r[\"choices\"][0][\"message\"][\"content\"] or \"\") % 2)'")


def test_sessions_that_span_a_push_train_with_each_tokens_own_version(tmp_path: Path) -> None:
    import numpy as np

    from polar_hpc.launch.monitor import cancel_run
    from polar_hpc.store.reader import ShardReader
    from polar_hpc.train.grpo.launched import launch_run, wait_until_up
    from polar_hpc.train.grpo.metrics import read_steps
    from polar_hpc.train.grpo.run import check_recipe, load_policy, train_grpo, trainer_model_dir
    from polar_hpc.wire.versions import UNKNOWN
    from tests.integration.launch.helpers import stop_run

    cfg = load_recipe(RECIPE, TINY)
    cfg = msgspec.structs.replace(cfg, agent=msgspec.structs.replace(cfg.agent, command=SLOW_STEP1),
                                  evaluator=msgspec.structs.replace(cfg.evaluator, command=EVEN_REPLY))
    tasks = list(iter_tasks(cfg))
    check_recipe(cfg, tasks)
    model_dir = trainer_model_dir(cfg)
    model, tok = load_policy(model_dir)
    run = launch_run(cfg, str(tmp_path / "run"))
    try:
        wait_until_up(run.root, cfg)
        trainer = train_grpo(cfg, run.root, tasks, model=model, tokenizer=tok, model_dir=model_dir)
        cancel_run(run)
    finally:
        stop_run(run.root)

    s1, s2 = read_steps(run.root)
    policy = run.policy()  # what a restarted inference server would load
    assert policy is not None and Path(policy.path).parent == run.root / "checkpoints", policy
    assert s1.rollout_versions == ["default"] and s1.counts.spanned == 0 and s1.counts.trained == 2
    # step 2: the slow group, pushed v1 between its calls: both sessions span two versions, within the bound
    assert s2.pushed_version == 1 and s2.rollout_versions == ["default", "1"], s2
    assert (s2.counts.trained, s2.counts.spanned, s2.counts.stale, s2.counts.stale_tokens) == (2, 2, 0, 0), s2
    rows = trainer.rollout_func.last.rows
    assert {r.group_id.split("@")[1] for r in rows} == {"step1"} and len(rows) == 2
    recorded = {(r.group.group_id, r.sample_index): r for r in ShardReader(run.root).results()}
    for row in rows:
        (tr,) = recorded[(row.group_id, row.sample_index)].trajectory.traces
        assert tr.meta.weight_versions == ["default", "1"]
        # the shard's per-token column: the first call's tokens sampled by default (0), the second's by 1
        sampled = [int(v) for v, m in zip(tr.response_versions, tr.loss_mask, strict=True) if m]
        assert sampled == sorted(sampled) and set(sampled) == {0, 1}
        assert row.versions == np.where(tr.loss_mask > 0, tr.response_versions, UNKNOWN).tolist()
