"""GRPO from recorded shards: a TRL ``rollout_func`` that replays a finished run's groups, with the same rows and
the same truncated IS correction as the live loop (``TisGRPOTrainer``; the recorded logprobs are the behaviour
policy's, so the correction covers both the engine mismatch and the policy lag since the run recorded them).

    rollouts = ShardRollouts(["runs/local-grpo-..."], num_generations=8, filler_id=tok.pad_token_id)
    trainer = replay_trainer(rollouts, model, tok, cfg.trainer, output_dir="replay")
    trainer.train()

A group is every session whose ``SessionResult.group`` is the same (the task id when a session has none: a run
launched without the trainer, where each task's ``num_samples`` sessions form its group). Groups are replayed in
recorded order (``rollout_step``, then group id); TRL's dataset is their ids. The trainer scores at the
temperature the recorded sessions were sampled at (``ShardRollouts.temperatures``, through ``trainer_temperature``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from polar_hpc.config.run import DEFAULT_TIMEOUTS, Timeouts, TrainerConfig
from polar_hpc.log import get_logger
from polar_hpc.train.async_client import Group
from polar_hpc.train.grpo.batch import Completion, GroupCounts, StepRollouts, group_completions, rollout_output
from polar_hpc.train.grpo.live import unique_prompts
from polar_hpc.wire.ids import GroupTag

log = get_logger("train")


def recorded_groups(paths: list[str | Path], *, num_generations: int) -> dict[str, Group]:
    """The groups recorded in ``paths`` (run dirs, shard dirs or files), each ``num_generations`` sessions wide
    (a sample index beyond it is left out and logged; a missing one becomes a placeholder)."""
    from polar_hpc.store.reader import ShardReader

    groups: dict[str, Group] = {}
    for r in ShardReader(paths, must_exist=True).results():
        tag = r.group or GroupTag(group_id=r.task_id, base_task_id=r.task_id, policy_version=r.policy_version)
        gid = tag.group_id
        g = groups.get(gid)
        if g is None:
            g = groups[gid] = Group.of(tag, num_samples=num_generations)
        if r.sample_index >= num_generations:
            log.warning("group %s: sample %d is beyond num_generations=%d; left out", gid, r.sample_index,
                        num_generations)
            continue
        g.results.append(r)
    return dict(sorted(groups.items(), key=lambda kv: (kv[1].rollout_step, kv[0])))


class ShardRollouts:
    """A TRL ``rollout_func`` (``__call__(prompts, trainer)``) over recorded groups; prompts are group ids."""

    def __init__(self, paths: list[str | Path], *, num_generations: int, filler_id: int,
                 min_group_fraction: float = 0.0, timeouts: Timeouts = DEFAULT_TIMEOUTS) -> None:
        self.num_generations = num_generations
        self.filler_id = filler_id
        self.min_group_fraction = min_group_fraction
        self.timeouts = timeouts
        self.groups = recorded_groups(paths, num_generations=num_generations)
        if not self.groups:
            raise ValueError(f"no recorded sessions in {[str(p) for p in paths]}")
        self.last: StepRollouts | None = None

    @property
    def group_ids(self) -> list[str]:
        return list(self.groups)

    @property
    def temperatures(self) -> list[float]:
        """The distinct temperatures the recorded sessions were sampled at (empty: none recorded)."""
        from polar_hpc.train.async_client import group_samples

        return sorted({x for g in self.groups.values() for s in group_samples(g) for x in s.temperatures})

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        rows: list[Completion] = []
        counts = GroupCounts()
        for gid in unique_prompts(prompts, self.num_generations):
            r, c = group_completions(self.groups[gid], filler_id=self.filler_id,
                                     min_group_fraction=self.min_group_fraction, timeouts=self.timeouts)
            rows += r
            counts.add(c)
        self.last = StepRollouts(rows=rows, counts=counts, wait_s=0.0)
        return rollout_output(rows)


def replay_trainer(rollouts: ShardRollouts, model: Any, tokenizer: Any, t: TrainerConfig, *,
                   output_dir: str | Path, steps: int | None = None) -> Any:
    """A ``TisGRPOTrainer`` replaying ``rollouts``' groups ``t.groups_per_step`` a step (default: all of them
    once)."""
    import os

    from datasets import Dataset
    from trl import GRPOConfig

    from polar_hpc.train.grpo.batch import session_reward
    from polar_hpc.train.grpo.run import trainer_temperature
    from polar_hpc.train.grpo.tis import TisGRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    g = rollouts.num_generations
    n = steps or max(1, len(rollouts.group_ids) // t.groups_per_step)
    order = (rollouts.group_ids * (n * t.groups_per_step // len(rollouts.group_ids) + 1))[:n * t.groups_per_step]
    args = GRPOConfig(
        output_dir=str(output_dir), per_device_train_batch_size=g * t.groups_per_step, num_generations=g,
        gradient_accumulation_steps=1, steps_per_generation=1, num_iterations=1, max_steps=n,
        learning_rate=t.learning_rate, lr_scheduler_type=t.lr_scheduler, beta=t.beta, loss_type=t.loss_type,
        seed=t.seed, shuffle_dataset=False, temperature=trainer_temperature(rollouts.temperatures, "replay"),
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
        dataloader_pin_memory=False, bf16=False,
    )
    return TisGRPOTrainer(model=model, reward_funcs=[session_reward], args=args, processing_class=tokenizer,
                          train_dataset=Dataset.from_dict({"prompt": order}), rollout_func=rollouts,
                          tis_clip=t.tis_clip, tis_level=t.tis_level, tis_mask=t.tis_mask, loss_norm=t.loss_norm,
                          micro_batch_tokens=t.micro_batch_tokens)
