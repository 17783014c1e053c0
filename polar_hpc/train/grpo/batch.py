"""Evaluated groups as the rows TRL's ``rollout_func`` returns: one row per trainable chain of every session.

Each session gives:

- one row per **chain** the policy sampled (not an oracle trace) that is trainable and has at least one loss-mask
  token, in trace order: its prompt ids, response ids, rollout logprobs and loss mask (``env_mask``). A session
  with several chains (compaction, sub-agents, ``per_request`` traces) trains on all of them; every row carries
  the session's outcome reward and its **advantage** against the group, computed over sessions (each counted
  once, ``credit.session_advantages``); ``trainer.loss_norm`` then decides how the rows weigh (``credit``);
- a **placeholder** when the session has no such chain: it sent no result (ERROR, CANCELLED), it ended ERROR (its
  mask is all 0), or every chain is marked untrainable. A placeholder has ``env_mask`` all 0, reward ``None`` and
  advantage 0: it adds no gradient and is not in the baseline. A group with fewer finished sessions than
  ``min_group_fraction`` becomes all placeholders (counted in ``rejected_groups``).

A session that ended TIMEOUT (out of turns or time) is a failure, reward 0, its sampled chains trained, as ``eval``
counts it (``trainer.timeouts = "fail"``, the default); with ``"drop"`` it is a placeholder.

A step's row count therefore varies; ``TisGRPOTrainer`` trains on the rows with their own advantages.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from polar_hpc.config.run import DEFAULT_TIMEOUTS, Timeouts
from polar_hpc.train.async_client import Group, TrainSample, group_samples
from polar_hpc.train.grpo.credit import informative, session_advantages
from polar_hpc.train.grpo.inflight import StaleBound, bound_session, version_span
from polar_hpc.train.grpo.mismatch import sampled_versions, token_turns
from polar_hpc.wire.ids import SessionId
from polar_hpc.wire.traces import TraceStatus


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
    advantage: float = 0.0
    """The session's advantage against its group (every row of a session the same)."""
    session: str = ""
    """``group_id/sample_index``: the rows of one session share it."""
    harness: str = ""
    versions: list[int] = msgspec.field(default_factory=list)
    """Per completion token: the weight version that sampled it (-1 where ``env_mask`` is 0 or not recorded)."""
    turns: list[int] = msgspec.field(default_factory=list)
    """Per completion token: the session call that sampled it (``mismatch.token_turns``; -1 where not sampled)."""


class GroupCounts(msgspec.Struct, kw_only=True):
    """What happened to the sessions of the groups a step used (sums over groups)."""

    groups: int = 0
    sessions: int = 0
    trained: int = 0
    no_result: int = 0
    """Sessions that sent no result (ERROR, CANCELLED)."""
    not_completed: int = 0
    """Sessions that ended TIMEOUT / ERROR with a result (mask all 0), TIMEOUT ones only under ``timeouts = "drop"``
    or without a sampled chain."""
    timed_out: int = 0
    """TIMEOUT sessions trained as failures, reward 0 (``trainer.timeouts = "fail"``)."""
    untrainable: int = 0
    """Completed sessions without a trainable sampled chain (marked untrainable, oracle only, no masked token)."""
    rows: int = 0
    """Rows trained on (one per trainable chain of the trained sessions; placeholders not counted)."""
    extra_chains: int = 0
    """Rows beyond the first of their session (compaction, sub-agents, per_request calls): ``rows - trained``."""
    skipped_chains: int = 0
    """Chains of trained sessions left out (oracle, untrainable or without a masked token)."""
    rejected_groups: int = 0
    tokens: int = 0
    """Prompt + completion tokens of the trained rows: what the trainer's forward and backward passes cost."""
    trainable_tokens: int = 0
    """Of those, the ones with loss (``env_mask`` 1)."""
    spanned: int = 0
    """Trained sessions whose tokens were sampled by more than one weight version (in-flight updates)."""
    stale: int = 0
    """Sessions with a token more than ``max_off_policy_steps`` versions behind the trainer (``inflight``):
    dropped, or with those tokens masked, by ``trainer.stale_sessions``."""
    stale_tokens: int = 0
    """Trainable tokens of those sessions past the bound (not trained either way)."""

    def add(self, other: GroupCounts) -> None:
        for f in self.__struct_fields__:
            setattr(self, f, getattr(self, f) + getattr(other, f))


class RefillCounts(msgspec.Struct, kw_only=True):
    """What dynamic sampling did in one step (``refill``)."""

    set_aside: int = 0
    """Groups with no reward variance, not trained on."""
    submitted: int = 0
    """Fresh groups submitted in their place (at most ``trainer.max_refill_groups``)."""
    short: int = 0
    """Informative groups the step lacked when the budget was spent (it trained on fewer)."""


class StepRollouts(msgspec.Struct, kw_only=True):
    """What the last ``rollout_func`` call returned, for the step's metrics."""

    rows: list[Completion]
    counts: GroupCounts
    wait_s: float
    """From the call to its groups' return, pushes excluded."""
    push_s: float = 0.0
    """Loading the newest checkpoint on every engine during this call (0: none was new)."""
    refill: RefillCounts | None = None
    """What dynamic sampling did (None: ``trainer.dynamic_sampling`` off)."""
    group_s: float = 0.0
    """Mean time from submitting one of the step's groups to its last session back (0: not measured)."""


def _usable(s: TrainSample) -> bool:
    return s.trainable and not s.masked and bool(s.loss_mask[s.prompt_length:].any())


def _row(s: TrainSample, reward: float | None) -> Completion:
    pl = s.prompt_length
    mask = s.loss_mask[pl:].astype(np.int64)
    logps = np.where(mask > 0, s.rollout_logprobs, 0.0)  # tokens the policy did not sample carry no logprob
    return Completion(group_id=s.group_id, sample_index=s.sample_index, prompt_ids=s.tokens[:pl].tolist(),
                      completion_ids=s.tokens[pl:].tolist(), logprobs=logps.astype(float).tolist(),
                      env_mask=mask.tolist(), reward=reward, weight_versions=list(s.weight_versions),
                      temperatures=list(s.temperatures),
                      session=SessionId(task_id=s.group_id, sample=s.sample_index).key,
                      harness=s.harness, versions=sampled_versions(s, mask).tolist(),
                      turns=token_turns(mask, s.meta.completion_indices).tolist())


def _bounded(rows: list[Completion], bound: StaleBound, counts: GroupCounts) -> list[Completion] | None:
    """One session's rows under the staleness bound (``inflight.bound_session``), counted; None: left out."""
    masks = [np.asarray(r.env_mask, dtype=np.int64) for r in rows]
    versions = [np.asarray(r.versions, dtype=np.int64) for r in rows]
    kept, n = bound_session(masks, versions, now=bound.now, bound=bound.max_lag, policy=bound.policy)
    if n:
        counts.stale += 1
        counts.stale_tokens += n
    if kept is None:
        return None
    out = []
    for r, m in zip(rows, kept, strict=True):
        if m.any():
            r.env_mask = m.tolist()
            r.logprobs = np.where(m > 0, np.asarray(r.logprobs), 0.0).tolist()
            out.append(r)
    return out


def _placeholder(group_id: str, index: int, prompt_ids: list[int], filler_id: int) -> Completion:
    return Completion(group_id=group_id, sample_index=index, prompt_ids=prompt_ids, completion_ids=[filler_id],
                      logprobs=[0.0], env_mask=[0], reward=None, placeholder=True,
                      session=SessionId(task_id=group_id, sample=index).key)


def group_completions(group: Group, *, filler_id: int, min_group_fraction: float = 0.0,
                      bound: StaleBound | None = None,
                      timeouts: Timeouts = DEFAULT_TIMEOUTS) -> tuple[list[Completion], GroupCounts]:
    """The group's rows, session by session in sample order (see the module docstring), and what was counted.
    ``bound`` (in-flight updates): sessions with tokens too old for the trainer are dropped or masked first.
    ``timeouts`` (``TrainerConfig.timeouts``): ``fail`` trains a TIMEOUT session's sampled chains with reward 0."""
    n = group.num_samples
    counts = GroupCounts(groups=1, sessions=n)
    fail_timeouts = timeouts == "fail"
    by_session: dict[int, list[TrainSample]] = {}
    for s in group_samples(group, keep_timeouts=fail_timeouts):
        by_session.setdefault(s.sample_index, []).append(s)
    statuses = {r.sample_index: r.trajectory.status for r in group.results}
    rewards = {r.sample_index: r.reward for r in group.results}
    chains_of = {r.sample_index: len(r.trajectory.traces) for r in group.results}
    usable_of = {i: sorted((s for s in ch if _usable(s)), key=lambda s: s.trace_index)
                 for i, ch in by_session.items()}
    failed = {i for i, st in statuses.items() if fail_timeouts and st == TraceStatus.TIMEOUT and usable_of.get(i)}
    finished = sum(1 for st in statuses.values() if st == TraceStatus.COMPLETED) + len(failed)
    rejected = (finished / n if n else 0.0) < min_group_fraction
    counts.rejected_groups = int(rejected)
    chosen: dict[int, list[Completion]] = {}
    for i in range(n):
        usable = usable_of.get(i, [])
        if i not in statuses:
            counts.no_result += 1
        elif i in failed:
            counts.timed_out += 1
        elif statuses[i] != TraceStatus.COMPLETED:
            counts.not_completed += 1
        elif not usable:
            counts.untrainable += 1
        if usable and not rejected:
            rows_i: list[Completion] | None = [_row(s, 0.0 if i in failed else rewards[i]) for s in usable]
            if bound is not None and rows_i:
                rows_i = _bounded(rows_i, bound, counts)
            if rows_i:
                chosen[i] = rows_i
                if version_span([np.asarray(r.versions) for r in rows_i]) > 1:
                    counts.spanned += 1
                counts.skipped_chains += chains_of[i] - len(rows_i)
    advantages = session_advantages([chosen[i][0].reward for i in sorted(chosen)])
    for i, adv in zip(sorted(chosen), advantages, strict=True):
        for r in chosen[i]:
            r.advantage = adv
    counts.trained = len(chosen)
    counts.rows = sum(len(rs) for rs in chosen.values())
    counts.extra_chains = counts.rows - counts.trained
    trained = [r for rs in chosen.values() for r in rs]
    counts.tokens = sum(len(r.prompt_ids) + len(r.completion_ids) for r in trained)
    counts.trainable_tokens = sum(int(sum(r.env_mask)) for r in trained)
    seen = [s.tokens[:s.prompt_length].tolist() for ch in by_session.values() for s in ch]
    any_prompt = next((rs[0].prompt_ids for rs in chosen.values()), seen[0] if seen else [filler_id])
    rows: list[Completion] = []
    for i in range(n):
        rows += chosen.get(i) or [_placeholder(group.group_id, i, any_prompt, filler_id)]
    return rows, counts


def group_informative(rows: list[Completion]) -> bool:
    """Whether a group's rows carry any advantage (two trained sessions with different rewards)."""
    return informative([rs.reward for rs in first_rows(rows)])


def first_rows(rows: list[Completion]) -> list[Completion]:
    """The first row of each trained session (placeholders left out): one per session."""
    seen: set[str] = set()
    out = []
    for r in rows:
        if not r.placeholder and r.session not in seen:
            seen.add(r.session)
            out.append(r)
    return out


def row_temperatures(rows: list[Completion]) -> list[float]:
    """The distinct temperatures the trained rows were sampled at (placeholders and unrecorded rows left out)."""
    return sorted({t for r in rows if not r.placeholder for t in r.temperatures})


def rollout_output(rows: list[Completion]) -> dict[str, Any]:
    """The dict TRL's ``rollout_func`` returns; ``reward`` reaches the reward function, ``advantage``, ``session``
    and ``group`` ``TisGRPOTrainer``'s loss (``credit``)."""
    return {
        "prompt_ids": [r.prompt_ids for r in rows],
        "completion_ids": [r.completion_ids for r in rows],
        "logprobs": [r.logprobs for r in rows],
        "env_mask": [r.env_mask for r in rows],
        "reward": [r.reward for r in rows],
        "advantage": [r.advantage for r in rows],
        "session": [r.session for r in rows],
        "group": [r.group_id for r in rows],
        "harness": [r.harness for r in rows],
        "versions": [r.versions for r in rows],
        "turns": [r.turns for r in rows],
    }


def session_reward(prompts: list[Any], completions: list[Any], reward: list[float | None], **_: Any
                   ) -> list[float | None]:
    """TRL reward function: the reward polar-hpc's evaluator gave each session (``None``: a placeholder)."""
    return reward
