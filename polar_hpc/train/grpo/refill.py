"""Dynamic sampling (DAPO): a step trains on ``groups_per_step`` informative groups, refilled within a budget.

A group whose sessions all got the same reward (all 0, all 1) has advantage 0 everywhere: it costs a step's
rollouts and teaches nothing. With ``trainer.dynamic_sampling`` such groups are set aside (counted), and fresh
groups of other tasks are submitted in their place, at most ``trainer.max_refill_groups`` per step; when the budget
is spent first, the step trains on the informative groups it has and says so. Refills are submitted when the step
needs them, so they are sampled by the newest weights (fresher than ``max_off_policy_steps``; logged).

``fill_step`` is the loop; ``RefillOrder`` the tasks refills draw from (seeded, every task before repeats).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from polar_hpc.log import get_logger
from polar_hpc.train.grpo.batch import Completion, GroupCounts, RefillCounts, group_informative

log = get_logger("train")

Built = tuple[list[Completion], GroupCounts]
"""A group's rows and counts (``batch.group_completions``)."""


class RefillOrder:
    """Task ids for refills: the tasks shuffled with ``seed``, every task once before any repeats."""

    def __init__(self, task_ids: Sequence[str], seed: int) -> None:
        self._ids = list(task_ids)
        self._rng = random.Random(seed)
        self._queue: list[str] = []

    def take(self, n: int) -> list[str]:
        out: list[str] = []
        while len(out) < n:
            if not self._queue:
                self._queue = list(self._ids)
                self._rng.shuffle(self._queue)
            out.append(self._queue.pop())
        return out


def fill_step(first: list[Built], *, want: int, budget: int, fetch: Callable[[int], list[Built]],
              step: int) -> tuple[list[Built], RefillCounts]:
    """The informative groups among ``first``, topped up to ``want`` with ``fetch(n)`` (n fresh groups, evaluated)
    while at most ``budget`` are fetched in all; groups set aside and fetched are counted."""
    counts = RefillCounts()
    kept: list[Built] = []
    aside: list[Built] = []

    def sort(groups: list[Built]) -> None:
        for g in groups:
            (kept if group_informative(g[0]) else aside).append(g)
        counts.set_aside = len(aside)

    sort(first)
    while len(kept) < want and counts.submitted < budget:
        n = min(want - len(kept), budget - counts.submitted)
        counts.submitted += n
        sort(fetch(n))
    kept = kept[:want]
    counts.short = max(0, want - len(kept))
    if counts.short:
        log.warning("step %d: dynamic sampling found %d of %d informative groups within trainer.max_refill_groups = "
                    "%d (%d set aside); training on %d", step + 1, len(kept), want, budget, counts.set_aside,
                    len(kept) or min(want, len(aside)))
    if not kept:  # nothing informative: the step runs on groups without advantage (no gradient) rather than none
        return aside[:want], counts
    elif counts.submitted:
        log.info("step %d: %d groups without reward variance set aside, %d fresh groups submitted",
                 step + 1, counts.set_aside, counts.submitted)
    return kept, counts
