"""Evaluated groups -> TRL rollout_func rows: one row per chain of a session (a placeholder for a session without
one), failures counted. Multi-chain sessions on real harness sessions: test_grpo_credit.py."""

from __future__ import annotations

import numpy as np
import pytest

from polar_hpc.train.async_client import Group
from polar_hpc.train.grpo.batch import group_completions, rollout_output, session_reward
from polar_hpc.train.grpo.live import unique_prompts
from polar_hpc.trajectory.base import mark_training_filter
from polar_hpc.wire.calls import AppliedSampling
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.trajectories import make_session_result

FILLER = 7


def _group(results: list[SessionResult], n: int) -> Group:
    return Group(group_id="add@step0", base_task_id="add", policy_version=0, rollout_step=0, num_samples=n,
                 results=results)


def _session(rng: np.random.Generator, i: int, *, status: TraceStatus = TraceStatus.COMPLETED, traces: int = 1,
             reward: float = 1.0) -> SessionResult:
    return make_session_result(rng, task_id="add@step0", sample_index=i, status=status, traces=traces,
                               reward=reward, messages=False)


def test_completed_sessions_become_their_trace_with_the_loss_mask_as_env_mask() -> None:
    rng = np.random.default_rng(0)
    results = [_session(rng, i, reward=float(i % 2)) for i in range(4)]
    rows, counts = group_completions(_group(results[::-1], 4), filler_id=FILLER)
    assert [r.sample_index for r in rows] == [0, 1, 2, 3] and counts.trained == 4 and counts.sessions == 4
    for row, res in zip(rows, results, strict=True):
        tr = res.trajectory.traces[0]
        assert row.prompt_ids == tr.prompt_ids.tolist() and row.completion_ids == tr.response_ids.tolist()
        assert row.env_mask == tr.loss_mask.tolist() and row.reward == res.reward and not row.placeholder
        lp = np.asarray(row.logprobs, dtype=np.float32)
        np.testing.assert_array_equal(lp[tr.loss_mask == 1], tr.response_logprobs[tr.loss_mask == 1])
        assert not lp[tr.loss_mask == 0].any()  # tool / template tokens carry no logprob
    out = rollout_output(rows)
    assert set(out) == {"prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "advantage", "session",
                        "group", "harness", "versions", "turns"}
    assert all(len(v) == len(r.completion_ids) for r in rows for v in (r.versions, r.turns))
    assert session_reward([], [], reward=out["reward"]) == [0.0, 1.0, 0.0, 1.0]


def test_failed_timed_out_and_untrainable_sessions_are_placeholders_so_the_group_keeps_its_size() -> None:
    rng = np.random.default_rng(1)
    ok = _session(rng, 0)
    timed_out = _session(rng, 1, status=TraceStatus.TIMEOUT, reward=0.0)
    untrainable = _session(rng, 2)
    untrainable.trajectory.traces[0].trainable = False
    # sample 3 never sent a result (ERROR / CANCELLED)
    group = _group([ok, timed_out, untrainable], 4)
    group.failed = 1
    rows, counts = group_completions(group, filler_id=FILLER, timeouts="drop")
    assert len(rows) == 4 and [r.placeholder for r in rows] == [False, True, True, True]
    assert (counts.trained, counts.not_completed, counts.untrainable, counts.no_result) == (1, 1, 1, 1)
    for r in rows[1:]:
        assert r.reward is None and r.env_mask == [0] and r.completion_ids == [FILLER] and r.logprobs == [0.0]
        assert r.prompt_ids == rows[0].prompt_ids


def test_a_timed_out_session_is_a_failure_trained_with_reward_0_and_counts_as_finished() -> None:
    """``timeouts = "fail"`` (the default): a session cut at the turn limit scores 0 as ``eval`` counts it, whatever
    its repository's tests said, and is in the baseline, so a policy that loops after fixing is pushed away."""
    rng = np.random.default_rng(5)
    ok = _session(rng, 0, reward=1.0)
    looped = _session(rng, 1, status=TraceStatus.TIMEOUT, reward=1.0)  # fixed the repo, then ran out of turns
    for tr in looped.trajectory.traces:
        mark_training_filter(tr, TraceStatus.TIMEOUT)  # as the builder marks it
    assert not looped.trajectory.traces[0].trainable
    rows, counts = group_completions(_group([ok, looped], 2), filler_id=FILLER, min_group_fraction=1.0)
    assert [r.placeholder for r in rows] == [False, False] and counts.rejected_groups == 0
    assert [r.reward for r in rows] == [1.0, 0.0] and counts.timed_out == 1 and counts.not_completed == 0
    assert rows[0].advantage > 0 > rows[1].advantage
    tr = looped.trajectory.traces[0]
    assert rows[1].env_mask == tr.loss_mask.tolist() and sum(rows[1].env_mask) > 0
    # without a sampled chain (timed out waiting for a slot) it is left out either way
    slotless = _session(rng, 1, status=TraceStatus.TIMEOUT)
    slotless.trajectory.traces = []
    rows, counts = group_completions(_group([ok, slotless], 2), filler_id=FILLER, min_group_fraction=1.0)
    assert counts.rejected_groups == 1 and counts.not_completed == 1 and counts.timed_out == 0
    rows, counts = group_completions(_group([ok, looped], 2), filler_id=FILLER, timeouts="drop")
    assert [r.placeholder for r in rows] == [False, True] and counts.timed_out == 0 and counts.not_completed == 1
    # marked for another reason too (an unparsed tool call): not trained either way
    looped.trajectory.traces[0].mark_not_trainable("unparsed_tool_call")
    rows, counts = group_completions(_group([ok, looped], 2), filler_id=FILLER)
    assert [r.placeholder for r in rows] == [False, True] and counts.timed_out == 0


def test_a_session_with_several_chains_trains_on_each_trainable_one() -> None:
    rng = np.random.default_rng(2)
    res = _session(rng, 0, traces=3)
    res.trajectory.traces[2].trainable = False
    rows, counts = group_completions(_group([res, _session(rng, 1)], 2), filler_id=FILLER)
    assert [r.completion_ids for r in rows[:2]] == [t.response_ids.tolist() for t in res.trajectory.traces[:2]]
    assert [r.sample_index for r in rows] == [0, 0, 1] and rows[0].session == rows[1].session != rows[2].session
    assert (counts.trained, counts.rows, counts.extra_chains, counts.skipped_chains) == (2, 3, 1, 1)
    assert counts.tokens == sum(len(r.prompt_ids) + len(r.completion_ids) for r in rows)  # no placeholder here
    assert 0 < counts.trainable_tokens == sum(sum(r.env_mask) for r in rows) <= counts.tokens


def test_a_group_below_min_group_fraction_is_all_placeholders() -> None:
    rng = np.random.default_rng(3)
    results = [_session(rng, 0), _session(rng, 1, status=TraceStatus.ERROR)]
    rows, counts = group_completions(_group(results, 2), filler_id=FILLER, min_group_fraction=0.75)
    assert all(r.placeholder for r in rows) and counts.rejected_groups == 1 and counts.trained == 0
    rows, counts = group_completions(_group(results, 2), filler_id=FILLER, min_group_fraction=0.5)
    assert [r.placeholder for r in rows] == [False, True] and counts.rejected_groups == 0


def test_trl_prompts_are_task_ids_repeated_per_group() -> None:
    assert unique_prompts(["a", "a", "b", "b"], 2) == ["a", "b"]
    with pytest.raises(ValueError, match="each task id 2 times in a row"):
        unique_prompts(["a", "b", "a", "b"], 2)


def test_counts_add_up() -> None:
    rng = np.random.default_rng(4)
    _, a = group_completions(_group([_session(rng, 0)], 2), filler_id=FILLER)
    _, b = group_completions(_group([_session(rng, 0), _session(rng, 1)], 2), filler_id=FILLER)
    a.add(b)
    assert (a.groups, a.sessions, a.trained, a.no_result) == (2, 4, 3, 1)


def test_rows_carry_the_temperatures_their_chains_were_sampled_at() -> None:
    from polar_hpc.train.grpo.batch import row_temperatures
    from polar_hpc.train.grpo.run import trainer_temperature

    rng = np.random.default_rng(2)
    results = [_session(rng, i) for i in range(3)]
    for r, t in zip(results, (0.7, 0.7, None), strict=True):
        (tr,) = r.trajectory.traces
        tr.meta.sampling = [None if t is None else AppliedSampling(temperature=t, top_p=1.0, top_k=-1)]
    rows, _ = group_completions(_group(results, 4), filler_id=FILLER)  # sample 3: a placeholder
    assert [r.temperatures for r in rows] == [[0.7], [0.7], [], []]
    assert row_temperatures(rows) == [0.7] and trainer_temperature([0.7], "step 1") == 0.7
    assert trainer_temperature([], "step 1") == 1.0  # nothing recorded: /generate's default
    assert trainer_temperature([0.5, 1.0], "step 1") == 0.5  # several: the lowest, with a warning
    with pytest.raises(ValueError, match="step 1: the harness sampled greedily"):
        trainer_temperature([0.0], "step 1")
