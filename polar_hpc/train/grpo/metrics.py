"""Per-step GRPO metrics: one JSON line per optimizer step in ``run_dir/trainer/steps.jsonl``."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import msgspec

from polar_hpc.config.run import TrainerConfig
from polar_hpc.train.grpo.batch import GroupCounts, RefillCounts
from polar_hpc.train.grpo.mismatch import Mismatch, summary_line
from polar_hpc.wire.versions import engine_name

TRAINER_DIR = "trainer"
"""Under the run dir: the trainer's output (TRL's output_dir) and ``STEPS``."""
STEPS = "steps.jsonl"
CHECKPOINTS = "checkpoints"
"""Under the run dir: ``step-N`` model dirs the engines load (the newest ``trainer.keep_checkpoints`` are kept)."""


class StepMetrics(msgspec.Struct, kw_only=True):
    step: int
    """1-based optimizer step."""
    reward: float | None
    """Mean session reward of the step's sessions (placeholders left out); None when every session of the step was a
    placeholder (failed, untrainable, or dropped as stale by in-flight updates)."""
    loss: float
    logp_diff_mean: float
    """Trainer-vs-rollout |Δ logp| over trainable tokens, before the step's update (nat)."""
    logp_diff_max: float
    logp_share_above: float = 0.0
    """Share of trainable tokens with |Δ logp| above ``polar_hpc.train.agreement.ABOVE_NAT``."""
    clipped_share: float
    masked_share: float = 0.0
    """Share of ratios outside the ``trainer.tis_mask`` band (weight 0; 0 when masking is off)."""
    grad_norm: float | None = None
    """TRL's gradient norm of the step (before clipping; None: not logged)."""
    mismatch: Mismatch | None = None
    """|Δ logp|, masked and clipped tokens by harness, weight-version lag and turn (``mismatch``)."""
    rollout_versions: list[str]
    """Weight versions the step's trained traces were sampled with (exactly ``max(step - 1 - k, 0)``
    with ``k = trainer.max_off_policy_steps``; 0 is ``default``); with ``trainer.staleness = "in_flight"`` any of the
    last ``k + 1`` (sessions spanning versions, tokens past the bound: ``counts.spanned`` / ``stale``)."""
    pushed_version: int
    """The version the engines serve after this step's push."""
    wait_s: float
    """Time the trainer waited for this step's groups."""
    step_s: float
    push_s: float = 0.0
    """Loading the newest checkpoint on every engine, at the start of this step's rollout call (no group
    generating)."""
    save_s: float = 0.0
    """Saving this step's checkpoint."""
    temperatures: list[float] = msgspec.field(default_factory=list)
    """The temperatures the step's trained rows were sampled at (one, unless the harness varied it)."""
    counts: GroupCounts
    """Groups, sessions, rows (one per trained chain; ``rows / trained`` chains per trained session)."""
    refill: RefillCounts | None = None
    """Dynamic sampling: groups set aside, fresh ones submitted, informative groups short (None: off)."""
    group_s: float = 0.0
    """Mean time from submitting one of the step's groups to its last session back (0: not measured)."""
    time: float


def steps_path(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / TRAINER_DIR / STEPS


def append_step(run_dir: str | Path, m: StepMetrics) -> None:
    p = steps_path(run_dir)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "ab") as f:
        f.write(msgspec.json.encode(m) + b"\n")


def read_steps(run_dir: str | os.PathLike[str]) -> list[StepMetrics]:
    """The steps recorded in ``run_dir`` (empty when no trainer ran there)."""
    p = steps_path(run_dir)
    if not p.is_file():
        return []
    dec = msgspec.json.Decoder(StepMetrics)
    return [dec.decode(line) for line in p.read_bytes().splitlines() if line.strip()]


def mean_reward(steps: Sequence[StepMetrics]) -> float:
    """The mean of the steps' rewards, steps without one left out (nan when no step has one)."""
    rewards = [m.reward for m in steps if m.reward is not None]
    return sum(rewards) / len(rewards) if rewards else float("nan")


IDLE_HINT = 0.10
"""Above this share of its time waiting for rollouts (after the first step), a run ends with ``pool_hint``."""


def pool_hint(steps: Sequence[StepMetrics], cfg: TrainerConfig, num_samples: int) -> str | None:
    """How many groups in flight would keep the trainer fed, when it waited more than ``IDLE_HINT`` of its steps
    (after the first: every run waits for its first groups). Little's law: a step takes ``groups_per_step`` groups
    in the time it trains, a group is back ``group_s`` after submission, so ``groups_per_step * group_s / train``
    groups must be generating. None when the trainer was fed or nothing was measured."""
    later = [m for m in steps[1:] if m.group_s > 0]
    total = sum(m.step_s for m in later)
    if not later or total <= 0:
        return None
    idle = sum(m.wait_s + m.push_s for m in later) / total
    train_s = max(sum(m.step_s - m.wait_s - m.push_s for m in later) / len(later), 1e-3)
    group_s = sum(m.group_s for m in later) / len(later)
    need = math.ceil(cfg.groups_per_step * group_s / train_s)
    k = max(1, math.ceil(need / cfg.groups_per_step) - 1)
    if idle <= IDLE_HINT or (cfg.staleness == "in_flight" and k <= cfg.max_off_policy_steps):
        return None
    why = (f"the trainer waited {100 * idle:.0f}% of steps 2..{steps[-1].step}: a group was back {group_s:.1f}s "
           f"after submission, a step trained in {train_s:.1f}s, so about {need} groups must be generating")
    pool = f"gateway.run_pool >= {(k + 1) * cfg.groups_per_step * num_samples}"
    if cfg.staleness == "in_flight":
        return (f"{why} (now {(cfg.max_off_policy_steps + 1) * cfg.groups_per_step}): "
                f"trainer.max_off_policy_steps = {k} and {pool}")
    instead = ", without trainer.dynamic_sampling (in-flight steps have no groups of their own to refill)"
    return (f"{why}, and each step waits for its own: trainer.staleness = \"in_flight\" with "
            f"trainer.max_off_policy_steps = {k} and {pool}{instead if cfg.dynamic_sampling else ''} "
            "(docs/train.md, Stragglers)")


def reward_text(m: StepMetrics) -> str:
    return "-" if m.reward is None else f"{m.reward:.3f}"


def step_line(m: StepMetrics) -> str:
    """The line ``polar-hpc train grpo`` prints per step."""
    wait = m.wait_s / m.step_s if m.step_s > 0 else 0.0
    placeholders = m.counts.sessions - m.counts.trained
    return (f"step {m.step:3d}  reward {reward_text(m)}  loss {m.loss:+.4f}  |Δlogp| {m.logp_diff_mean:.2e} "
            f"(max {m.logp_diff_max:.2e}, clipped {100 * m.clipped_share:.0f}%"
            + (f", masked {100 * m.masked_share:.0f}%" if m.masked_share else "") + ")  " + _split_text(m) +
            f"rollout v{','.join(m.rollout_versions) or '-'} -> pushed v{engine_name(m.pushed_version)}  "
            f"waited {100 * wait:.0f}% of {m.step_s:.1f}s (push {m.push_s:.1f}s)"
            + (f"  rows {m.counts.rows} of {m.counts.trained} sessions "
               f"({m.counts.rows / m.counts.trained:.1f} chains/session)" if m.counts.rows > m.counts.trained else "")
            + (f"  placeholders {placeholders}" if placeholders else "")
            + (f"  timed out {m.counts.timed_out} (scored 0)" if m.counts.timed_out else "")
            + (f"  in flight: {m.counts.spanned} sessions spanned versions, {m.counts.stale} stale "
               f"({m.counts.stale_tokens} tokens)" if m.counts.spanned or m.counts.stale else "")
            + (f"  refill: {m.refill.set_aside} set aside, {m.refill.submitted} submitted"
               + (f", {m.refill.short} SHORT" if m.refill.short else "") if m.refill is not None else "")
            + (f"  MIXED temperatures {', '.join(f'{t:g}' for t in m.temperatures)}"
               if len(m.temperatures) > 1 else ""))


def _split_text(m: StepMetrics) -> str:
    """``[lag 0: ..., 1: ...; harness ...]`` where a step's tokens have more than one lag or harness."""
    if m.mismatch is None:
        return ""
    parts = [summary_line(m.mismatch, a) for a in ("lag", "harness") if len(m.mismatch.axis(a)) > 1]
    return f"[{'; '.join(parts)}]  " if parts else ""
