from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from polar_hpc.train.async_client import AsyncConfig, AsyncRollouts, Group, group_samples
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.session import Task
from polar_hpc.wire.traces import TraceStatus


def _rollouts(tmp_path: Path, **cfg: Any) -> AsyncRollouts:
    return AsyncRollouts(tmp_path, AsyncConfig(**cfg))  # not connected: accept() is pure bookkeeping


def _open(ro: AsyncRollouts, n: int, step: int = 0) -> Task:
    task = ro.tag(Task(task_id="add", instruction="2+2", num_samples=n), rollout_step=step)
    ro._open[task.task_id] = Group(group_id=task.task_id, base_task_id="add", policy_version=ro.policy_version,
                                   rollout_step=step, num_samples=n, results=[])
    return task


def _results(factory: Any, task: Task, statuses: list[TraceStatus]) -> list[SessionResult]:
    out = []
    for i, st in enumerate(statuses):
        r = factory(task_id=task.task_id, sample_index=i, status=st, reward=float(i % 2))
        r.group = task.group
        out.append(r)
    return out


def test_group_yields_only_when_every_sample_is_back(tmp_path: Path, session_result_factory: Any) -> None:
    ro = _rollouts(tmp_path)
    task = _open(ro, 4)
    assert task.group is not None and task.group.group_id == task.task_id == "add@step0"
    assert task.group.base_task_id == "add" and task.group.policy_version == 0 and not task.metadata
    rs = _results(session_result_factory, task, [TraceStatus.COMPLETED] * 4)
    assert [ro.accept(r) for r in rs[:3]] == [None, None, None]
    group = ro.accept(rs[3])
    assert group is not None and len(group.results) == 4 and ro.pending == 0
    np.testing.assert_array_equal(group.rewards, [0, 1, 0, 1])
    assert ro.accept(rs[0]) is None  # a late duplicate of a handled group is ignored


def test_stale_groups_are_dropped_and_counted(tmp_path: Path, session_result_factory: Any) -> None:
    ro = _rollouts(tmp_path, max_off_policy_steps=1)
    old = _open(ro, 2, step=0)
    ro.policy_version = 1
    fresh_enough = _open(ro, 2, step=1)
    ro.policy_version = 2  # `old` is now 2 versions behind, `fresh_enough` 1
    got = [ro.accept(r) for r in _results(session_result_factory, old, [TraceStatus.COMPLETED] * 2)]
    assert got == [None, None] and ro.stats.stale == 1
    got = [ro.accept(r) for r in _results(session_result_factory, fresh_enough, [TraceStatus.COMPLETED] * 2)]
    assert got[1] is not None and got[1].policy_version == 1 and ro.stats.yielded == 1


def test_min_group_fraction_rejects(tmp_path: Path, session_result_factory: Any) -> None:
    ro = _rollouts(tmp_path, min_group_fraction=0.75)
    a, b = _open(ro, 4, step=0), _open(ro, 4, step=1)
    statuses = [TraceStatus.COMPLETED, TraceStatus.TIMEOUT, TraceStatus.ERROR, TraceStatus.COMPLETED]
    assert [ro.accept(r) for r in _results(session_result_factory, a, statuses)][-1] is None
    assert ro.stats.incomplete == 1
    statuses[2] = TraceStatus.COMPLETED
    group = [ro.accept(r) for r in _results(session_result_factory, b, statuses)][-1]
    assert group is not None and group.completed_fraction == 0.75


def test_group_samples_mask_timeouts(tmp_path: Path, session_result_factory: Any) -> None:
    ro = _rollouts(tmp_path, min_group_fraction=0.0)
    task = _open(ro, 2)
    rs = _results(session_result_factory, task, [TraceStatus.COMPLETED, TraceStatus.TIMEOUT])
    group = [ro.accept(r) for r in rs][-1]
    assert group is not None
    samples = group_samples(group)
    ok, bad = samples[0], samples[-1]
    tr = rs[0].trajectory.traces[0]
    np.testing.assert_array_equal(ok.tokens, np.concatenate([tr.prompt_ids, tr.response_ids]))
    np.testing.assert_array_equal(ok.loss_mask[ok.prompt_length:], tr.loss_mask)
    assert ok.loss_mask[: ok.prompt_length].sum() == 0 and not ok.masked
    np.testing.assert_array_equal(ok.rollout_logprobs, tr.response_logprobs)
    assert bad.masked and bad.status == TraceStatus.TIMEOUT and bad.loss_mask.sum() == 0
    assert ok.group_id == task.task_id and ok.reward == rs[0].trajectory.traces[0].reward
