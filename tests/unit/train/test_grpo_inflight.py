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
from polar_hpc.train.grpo.inflight import StaleBound, bound_session, oldest, stale_tokens, version_span
from polar_hpc.train.grpo.run import check_staleness
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus
from polar_hpc.wire.versions import UNKNOWN, parse_version
from tests.fixtures.trajectories import make_session_result


def test_a_sessions_span_and_oldest_version_count_known_versions_only() -> None:
    v = [np.array([0, 0, UNKNOWN, 1]), np.array([3, UNKNOWN])]
    assert version_span(v) == 3 and oldest(v) == 0
    assert version_span([np.array([UNKNOWN])]) == 0 and oldest([np.array([UNKNOWN])]) == UNKNOWN
    assert not stale_tokens(np.array([UNKNOWN]), now=9, bound=1).any()  # not recorded: never judged stale


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
    """The session's one chain as one call per run of loss-mask 1 tokens, sampled by ``versions`` in order: its
    per-token version column (``Trace.response_versions``, as the builders write it)."""
    tr = res.trajectory.traces[0]
    edges = np.flatnonzero(np.diff(np.concatenate([[0], tr.loss_mask, [0]])))
    assert len(edges) // 2 == len(versions)
    col = np.full(tr.loss_mask.shape[0], UNKNOWN, dtype=np.int32)
    for (a, b), v in zip(edges.reshape(-1, 2), versions, strict=True):
        col[a:b] = parse_version(v)
    tr.response_versions = col
    tr.meta.weight_versions = sorted(set(versions))
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


def test_in_flight_schedules_k_steps_past_the_last_and_the_trainer_reads_the_same_prefix() -> None:
    from polar_hpc.train.grpo.live import scheduled_groups
    from polar_hpc.train.grpo.run import schedule

    exact = TrainerConfig(steps=5, groups_per_step=2, max_off_policy_steps=3)
    in_flight = msgspec.structs.replace(exact, staleness="in_flight")
    assert scheduled_groups(exact) == 10
    assert scheduled_groups(in_flight) == 16  # the pool of (k + 1) * 2 groups stays full at the last step
    ids = [f"t{i}" for i in range(7)]
    long, short = schedule(ids, scheduled_groups(in_flight), 3), schedule(ids, scheduled_groups(exact), 3)
    assert long[:10] == short and len(long) == 16
