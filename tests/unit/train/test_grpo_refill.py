"""Dynamic sampling: a step whose first groups have no reward variance trains on refilled informative groups, with
what was set aside and submitted counted; the budget bounds the refills, and a step short of it says so."""

from __future__ import annotations

import logging

import numpy as np

from polar_hpc.train.async_client import Group
from polar_hpc.train.grpo.batch import group_completions, group_informative
from polar_hpc.train.grpo.refill import Built, RefillOrder, fill_step
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.trajectories import make_session_result

G = 4


def _built(rng: np.random.Generator, name: str, rewards: list[float]) -> Built:
    results = [make_session_result(rng, task_id=name, sample_index=i, reward=r, messages=False,
                                   status=TraceStatus.COMPLETED) for i, r in enumerate(rewards)]
    group = Group(group_id=name, base_task_id=name.split("@")[0], policy_version=0, rollout_step=0, num_samples=G,
                  results=results)
    return group_completions(group, filler_id=0)


class Fresh:
    """``fetch``: hands out the groups of ``plan`` in order, recording each request."""

    def __init__(self, plan: list[Built]) -> None:
        self.plan = plan
        self.asked: list[int] = []

    def __call__(self, n: int) -> list[Built]:
        self.asked.append(n)
        out, self.plan = self.plan[:n], self.plan[n:]
        return out


def test_all_zero_groups_are_set_aside_and_refilled_with_informative_ones() -> None:
    rng = np.random.default_rng(0)
    first = [_built(rng, "a@step0", [0, 0, 0, 0]), _built(rng, "b@step0", [0, 0, 0, 0])]
    assert not any(group_informative(rows) for rows, _ in first)
    fresh = Fresh([_built(rng, "c@step0~refill1", [1, 1, 1, 1]), _built(rng, "d@step0~refill1", [0, 1, 0, 0]),
                   _built(rng, "e@step0~refill2", [1, 0, 1, 1])])
    kept, counts = fill_step(first, want=2, budget=4, fetch=fresh, step=0)
    assert [rows[0].group_id for rows, _ in kept] == ["d@step0~refill1", "e@step0~refill2"]
    assert fresh.asked == [2, 1]  # 2 for the 2 set aside, then 1 for the all-1 refill
    assert (counts.set_aside, counts.submitted, counts.short) == (3, 3, 0)
    for rows, _ in kept:  # what trains has advantage
        assert any(r.advantage != 0 for r in rows)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.text = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.text += record.getMessage() + "\n"


def test_the_budget_bounds_the_refills_and_a_short_step_says_so() -> None:
    rng = np.random.default_rng(1)
    first = [_built(rng, "a@step3", [0, 0, 0, 0]), _built(rng, "b@step3", [1, 0, 0, 0])]
    fresh = Fresh([_built(rng, f"r{i}", [1, 1, 1, 1]) for i in range(5)])
    said = Lines()  # on the logger itself: a CLI run in this process turns polar_hpc's propagation off
    log = logging.getLogger("polar_hpc.train")
    log.addHandler(said)
    try:
        kept, counts = fill_step(first, want=2, budget=2, fetch=fresh, step=3)
    finally:
        log.removeHandler(said)
    assert [rows[0].group_id for rows, _ in kept] == ["b@step3"] and fresh.asked == [1, 1]
    assert (counts.set_aside, counts.submitted, counts.short) == (3, 2, 1)
    assert "step 4: dynamic sampling found 1 of 2 informative groups within trainer.max_refill_groups = 2" \
        in said.text


def test_no_informative_group_at_all_still_gives_the_step_rows() -> None:
    rng = np.random.default_rng(2)
    first = [_built(rng, "a@step0", [0, 0, 0, 0])]
    kept, counts = fill_step(first, want=1, budget=0, fetch=Fresh([]), step=0)
    assert len(kept) == 1 and counts.short == 1 and {r.advantage for r in kept[0][0]} == {0.0}


def test_refill_order_takes_every_task_before_repeating() -> None:
    order = RefillOrder(["a", "b", "c"], seed=1)
    first, second = order.take(3), order.take(3)
    assert sorted(first) == sorted(second) == ["a", "b", "c"]
