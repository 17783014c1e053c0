"""Evaluated groups as the rows TRL's ``rollout_func`` returns: one completion per session, always ``size`` a group.

TRL computes GRPO advantages over fixed blocks of ``num_generations`` rows, so a group must come back at the size
it was submitted. Each session gives exactly one row:

- the session's **last chain** that the policy sampled (not an oracle trace), is trainable and has at least one
  loss-mask token: its prompt ids, response ids, rollout logprobs and loss mask (``env_mask``); the session's
  outcome reward (``SessionResult.reward``) rides along. A session with several chains (compaction,
  sub-agents) trains on the last one; the others are counted in ``extra_chains``, not trained on (GRPO gives
  one advantage per session, TRL one row per advantage);
- a **placeholder** when the session has no such chain: it sent no result (ERROR, CANCELLED), it ended TIMEOUT or
  ERROR (its mask is all 0), or every chain is marked untrainable. A placeholder has ``env_mask`` all 0 and reward
  ``None``: TRL leaves an all-``None`` row out of the group's mean and gives it advantage 0, so it adds no gradient
  and does not bias the baseline. A group with fewer completed sessions than ``min_group_fraction`` becomes all
  placeholders (counted in ``rejected_groups``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from polar_hpc.train.async_client import Group, TrainSample, group_samples
from polar_hpc.wire.records import TraceStatus


class Completion(msgspec.Struct, kw_only=True):
    """One TRL row: what ``rollout_func`` returns for one session."""

    group_id: str
    sample_index: int
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    reward: float | None
    """``None`` for a placeholder (TRL: unscorable, advantage 0)."""
    weight_versions: list[str] = msgspec.field(default_factory=list)
    temperatures: list[float] = msgspec.field(default_factory=list)
    """The temperatures the engine sampled the chain at (its logprobs are under them; empty: not recorded)."""
    placeholder: bool = False


class GroupCounts(msgspec.Struct, kw_only=True):
    """What happened to the sessions of the groups a step used (sums over groups)."""

    groups: int = 0
    sessions: int = 0
    trained: int = 0
    no_result: int = 0
    """Sessions that sent no result (ERROR, CANCELLED)."""
    not_completed: int = 0
    """Sessions that ended TIMEOUT / ERROR with a result (mask all 0)."""
    untrainable: int = 0
    """Completed sessions without a trainable sampled chain (marked untrainable, oracle only, no masked token)."""
    extra_chains: int = 0
    """Chains beyond the one trained on, in sessions with several (compaction, sub-agents)."""
    rejected_groups: int = 0

    def add(self, other: GroupCounts) -> None:
        for f in self.__struct_fields__:
            setattr(self, f, getattr(self, f) + getattr(other, f))


class StepRollouts(msgspec.Struct, kw_only=True):
    """What the last ``rollout_func`` call returned, for the step's metrics."""

    rows: list[Completion]
    counts: GroupCounts
    wait_s: float
    """From the call to its groups' return, pushes excluded."""
    push_s: float = 0.0
    """Loading the newest checkpoint on every engine during this call (0: none was new)."""


def _usable(s: TrainSample) -> bool:
    return s.trainable and not s.masked and bool(s.loss_mask[s.prompt_length:].any())


def _row(s: TrainSample, reward: float) -> Completion:
    pl = s.prompt_length
    mask = s.loss_mask[pl:].astype(np.int64)
    logps = np.where(mask > 0, s.rollout_logprobs, 0.0)  # tokens the policy did not sample carry no logprob
    return Completion(group_id=s.group_id, sample_index=s.sample_index, prompt_ids=s.tokens[:pl].tolist(),
                      completion_ids=s.tokens[pl:].tolist(), logprobs=logps.astype(float).tolist(),
                      env_mask=mask.tolist(), reward=reward, weight_versions=list(s.weight_versions),
                      temperatures=list(s.temperatures))


def _placeholder(group_id: str, index: int, prompt_ids: list[int], filler_id: int) -> Completion:
    return Completion(group_id=group_id, sample_index=index, prompt_ids=prompt_ids, completion_ids=[filler_id],
                      logprobs=[0.0], env_mask=[0], reward=None, placeholder=True)


def group_completions(group: Group, *, filler_id: int, min_group_fraction: float = 0.0
                      ) -> tuple[list[Completion], GroupCounts]:
    """``group.num_samples`` rows in sample order (see the module docstring), and what was counted."""
    n = group.num_samples
    counts = GroupCounts(groups=1, sessions=n)
    by_session: dict[int, list[TrainSample]] = {}
    for s in group_samples(group):
        by_session.setdefault(s.sample_index, []).append(s)
    statuses = {r.sample_index: r.trajectory.status for r in group.results}
    rewards = {r.sample_index: r.reward for r in group.results}
    rejected = group.completed_fraction < min_group_fraction
    counts.rejected_groups = int(rejected)
    chosen: dict[int, Completion] = {}
    for i in range(n):
        chains = by_session.get(i, [])
        usable = [s for s in chains if _usable(s)]
        if i not in statuses:
            counts.no_result += 1
        elif statuses[i] != TraceStatus.COMPLETED:
            counts.not_completed += 1
        elif not usable:
            counts.untrainable += 1
        if usable and not rejected:
            chosen[i] = _row(max(usable, key=lambda s: s.trace_index), rewards[i])
            counts.extra_chains += len(chains) - 1
    counts.trained = len(chosen)
    seen = [s.tokens[:s.prompt_length].tolist() for ch in by_session.values() for s in ch]
    any_prompt = next((c.prompt_ids for c in chosen.values()), seen[0] if seen else [filler_id])
    rows = [chosen.get(i) or _placeholder(group.group_id, i, any_prompt, filler_id) for i in range(n)]
    return rows, counts


def row_temperatures(rows: list[Completion]) -> list[float]:
    """The distinct temperatures the trained rows were sampled at (placeholders and unrecorded rows left out)."""
    return sorted({t for r in rows if not r.placeholder for t in r.temperatures})


def rollout_output(rows: list[Completion]) -> dict[str, Any]:
    """The dict TRL's ``rollout_func`` returns; ``reward`` and ``weight_version`` reach the reward functions."""
    return {
        "prompt_ids": [r.prompt_ids for r in rows],
        "completion_ids": [r.completion_ids for r in rows],
        "logprobs": [r.logprobs for r in rows],
        "env_mask": [r.env_mask for r in rows],
        "reward": [r.reward for r in rows],
    }


def session_reward(prompts: list[Any], completions: list[Any], reward: list[float | None], **_: Any
                   ) -> list[float | None]:
    """TRL reward function: the reward polar-hpc's evaluator gave each session (``None``: a placeholder)."""
    return reward
