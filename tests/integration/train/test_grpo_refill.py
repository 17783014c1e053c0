"""Dynamic sampling through the real stack (tiny-qwen3 on the reference server, the recipe's curl sessions in
bubblewrap sandboxes, real TRL): the first step's planned groups can only score 0, so they are set aside and
fresh groups submitted in their place; the step trains on informative refills, counted in its metrics.

The tasks carry a ``hopeless`` flag: the evaluator fails those outright, and rewards an even-length reply on the
others (about half the samples, as test_grpo_trl.py). The first step's tasks (``schedule`` with the trainer's
seed) are the hopeless ones."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from polar_hpc.config import load_recipe
from polar_hpc.tasks.source import iter_tasks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
pytest.importorskip("torch", reason="the train extra (torch, trl) is not installed")

ROOT = Path(__file__).parents[3]
RECIPE = ROOT / "recipes" / "local-grpo.toml"
GROUPS, BUDGET = 2, 8
TINY = ["inference.model=asset:tiny-qwen3", "trainer.steps=1", f"trainer.groups_per_step={GROUPS}",
        "tasks.num_samples=4", "trainer.max_off_policy_steps=0", "trainer.threads=1", "trainer.dynamic_sampling=true",
        f"trainer.max_refill_groups={BUDGET}"]
EVEN_REPLY_UNLESS_HOPELESS = (
    "python3 -c 'import json, sys; r = json.load(open(\"reply.json\")); "
    "sys.exit(1 if {hopeless} else len(r[\"choices\"][0][\"message\"][\"content\"] or \"\") % 2)'")


def test_a_step_of_hopeless_groups_trains_on_refilled_informative_ones(tmp_path: Path) -> None:
    from polar_hpc.launch.monitor import cancel_run
    from polar_hpc.train.grpo.batch import group_informative
    from polar_hpc.train.grpo.launched import launch_run, wait_until_up
    from polar_hpc.train.grpo.metrics import read_steps
    from polar_hpc.train.grpo.run import check_recipe, load_policy, schedule, train_grpo, trainer_model_dir
    from tests.integration.launch.helpers import stop_run

    rows = [json.loads(line) for line in (ROOT / "recipes" / "tasks" / "addition.jsonl").read_text().splitlines()]
    first = set(schedule([r["task_id"] for r in rows], GROUPS, 0))
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps({**r, "hopeless": int(r["task_id"] in first)}) + "\n" for r in rows))
    cfg = load_recipe(RECIPE, [*TINY, f"tasks.path={tasks_file}"])
    cfg = msgspec.structs.replace(cfg, evaluator=msgspec.structs.replace(cfg.evaluator,
                                                                         command=EVEN_REPLY_UNLESS_HOPELESS))
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

    (step,) = read_steps(run.root)
    assert step.refill is not None, step
    # the two planned groups scored all 0: set aside; fresh ones came in their place, within the budget
    assert step.refill.set_aside >= GROUPS and 1 <= step.refill.submitted <= BUDGET and step.refill.short == 0, step
    assert step.counts.groups == GROUPS and step.counts.sessions == 4 * GROUPS, step
    rows_ = trainer.rollout_func.last.rows
    trained = sorted({r.group_id for r in rows_})
    assert len(trained) == GROUPS and all("~refill" in g and g.split("@")[0] not in first for g in trained), trained
    for g in trained:
        assert group_informative([r for r in rows_ if r.group_id == g]), g
    assert step.reward > 0.0, step
