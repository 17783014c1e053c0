"""In-flight weight updates: the version of every trained token, the staleness bound per session (drop / mask),
what is counted, and the settings refused before training. Through the real stack: tests/integration/train/
test_grpo_inflight.py."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from polar_hpc.config.run import TrainerConfig
from polar_hpc.train.async_client import Group
from polar_hpc.train.grpo.batch import group_completions
from polar_hpc.train.grpo.inflight import (
    UNKNOWN,
    StaleBound,
    bound_session,
    oldest,
    stale_tokens,
    token_versions,
    version_number,
    version_span,
)
from polar_hpc.train.grpo.run import check_staleness
from polar_hpc.wire.records import SessionResult, TraceStatus
from tests.fixtures.trajectories import make_session_result


def test_version_names_are_step_numbers_and_the_initial_weights_are_zero() -> None:
    assert [version_number(v) for v in ("default", "0", "7", None, "stub", "")] == [0, 0, 7, UNKNOWN, UNKNOWN,
                                                                                     UNKNOWN]


def test_each_sampled_token_gets_the_version_of_its_call_in_call_order() -> None:
    mask = np.array([1, 1, 0, 0, 1, 1, 1, 0, 1])  # call 1: 2 tokens, tool output, call 2: 3 tokens, ..., call 3: 1
    v = token_versions(mask, ["default", "1", "3"], [2, 3, 1])
    assert v.tolist() == [0, 0, UNKNOWN, UNKNOWN, 1, 1, 1, UNKNOWN, 3]
    assert version_span([v]) == 3 and oldest([v]) == 0


def test_counts_that_do_not_add_up_fall_back_to_the_chains_oldest_version() -> None:
    mask = np.array([1, 1, 0, 1])
    assert token_versions(mask, ["1", "2"], [2, 2], ["1", "2"]).tolist() == [1, 1, UNKNOWN, 1]
    assert token_versions(mask, [], [], []).tolist() == [UNKNOWN] * 4  # not recorded: never judged stale
    assert not stale_tokens(np.array([UNKNOWN]), now=9, bound=1).any()


def test_a_token_is_stale_when_it_lags_the_trainer_by_more_than_the_bound() -> None:
    v = np.array([0, 1, 2, 3, UNKNOWN])
    assert stale_tokens(v, now=3, bound=1).tolist() == [True, True, False, False, False]
    assert stale_tokens(v, now=3, bound=3).tolist() == [False] * 5


def test_drop_leaves_the_session_out_and_mask_keeps_its_fresh_tokens() -> None:
    masks = [np.array([1, 1, 0, 1]), np.array([1, 1])]
    versions = [np.array([0, 0, UNKNOWN, 2]), np.array([2, 2])]
    assert bound_session(masks, versions, now=2, bound=1, policy="drop") == (None, 2)
    kept, n = bound_session(masks, versions, now=2, bound=1, policy="mask")
    assert n == 2 and kept is not None
    assert [k.tolist() for k in kept] == [[0, 0, 0, 1], [1, 1]]
    same, n = bound_session(masks, versions, now=2, bound=2, policy="drop")
    assert n == 0 and same is masks
    # every trainable token stale: masking leaves nothing, so the session is left out too
    assert bound_session([np.array([1, 1])], [np.array([0, 0])], now=5, bound=1, policy="mask") == (None, 2)


def _tag(res: SessionResult, versions: list[str]) -> SessionResult:
    """Give the session's one chain one call per run of loss-mask 1 tokens, sampled by ``versions`` in order."""
    tr = res.trajectory.traces[0]
    runs = np.diff(np.flatnonzero(np.diff(np.concatenate([[0], tr.loss_mask, [0]]))))[::2]
    assert len(runs) == len(versions)
    tr.metadata = {**tr.metadata, "call_versions": versions, "call_tokens": [int(x) for x in runs],
                   "weight_versions": sorted(set(versions))}
    return res


def _group(versions: list[list[str]], rewards: list[float]) -> Group:
    rng = np.random.default_rng(0)
    results = [_tag(make_session_result(rng, task_id="add@step0", sample_index=i, status=TraceStatus.COMPLETED,
                                        reward=r, messages=False, turns=len(v)), v)
               for i, (v, r) in enumerate(zip(versions, rewards, strict=True))]
    return Group(group_id="add@step0", base_task_id="add", policy_version=0, rollout_step=0,
                 num_samples=len(results), results=results)


def test_rows_carry_per_token_versions_and_the_bound_drops_or_masks_counted() -> None:
    # session 0 ran across two pushes (default, 1, 2), session 1 within one version, sessions 2-3 at 2 and 3
    versions = [["default", "1", "2"], ["2", "2"], ["2", "3", "3"], ["3"]]
    group = _group(versions, [1.0, 0.0, 1.0, 0.0])
    rows, counts = group_completions(group, filler_id=7)
    assert counts.trained == 4 and counts.stale == 0 and counts.spanned == 2  # no bound: all trained
    r0 = rows[0]
    sampled = [v for v, m in zip(r0.versions, r0.env_mask, strict=True) if m]
    assert sorted(set(sampled)) == [0, 1, 2] and sampled == sorted(sampled)
    assert all(v == UNKNOWN for v, m in zip(r0.versions, r0.env_mask, strict=True) if not m)

    rows, counts = group_completions(_group(versions, [1.0, 0.0, 1.0, 0.0]), filler_id=7,
                                     bound=StaleBound(now=3, max_lag=1, policy="drop"))
    assert rows[0].placeholder and rows[0].advantage == 0.0 and not any(r.placeholder for r in rows[1:])
    assert (counts.trained, counts.stale, counts.spanned) == (3, 1, 1)
    assert counts.stale_tokens == sum(1 for v, m in zip(r0.versions, r0.env_mask, strict=True) if m and v < 2)
    assert sum(r.advantage for r in rows[1:]) == pytest.approx(0.0, abs=1e-5)  # baseline over the 3 kept

    rows, counts = group_completions(_group(versions, [1.0, 0.0, 1.0, 0.0]), filler_id=7,
                                     bound=StaleBound(now=3, max_lag=1, policy="mask"))
    kept = rows[0]
    assert not kept.placeholder and (counts.trained, counts.stale) == (4, 1)
    assert [v for v, m in zip(kept.versions, kept.env_mask, strict=True) if m] == \
        [v for v, m in zip(r0.versions, r0.env_mask, strict=True) if m and v >= 2]
    assert all(lp == 0.0 for lp, m in zip(kept.logprobs, kept.env_mask, strict=True) if not m)


@pytest.mark.parametrize(("settings", "words"), [
    ({"staleness": "in_flight", "max_off_policy_steps": 0}, "max_off_policy_steps"),
    ({"staleness": "in_flight", "dynamic_sampling": True}, "dynamic_sampling"),
    ({"stale_sessions": "mask"}, "stale_sessions"),
])
def test_contradicting_staleness_settings_are_one_line(settings: dict[str, object], words: str) -> None:
    why = check_staleness(msgspec.convert(settings, TrainerConfig))
    assert why is not None and words in why and "\n" not in why
    assert check_staleness(TrainerConfig(staleness="in_flight", stale_sessions="mask")) is None
    assert check_staleness(TrainerConfig()) is None
