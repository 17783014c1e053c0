"""TRL's ``rollout_func`` on a running polar-hpc run, and when it loads new weights on the engines.

``LiveRollouts`` owns an ``AsyncRollouts`` on a background event loop. TRL hands it the prompts of a step: task
ids (the dataset's ``prompt`` column), each repeated ``num_generations`` times; each task becomes one submitted
group of ``num_generations`` sessions. The dataset is in ``schedule`` order (TRL keeps it with
``shuffle_dataset=False``), so the groups of later steps can be submitted ahead.

Exact staleness, ``k = trainer.max_off_policy_steps``: ``weights.PushWeights`` only saves the model after each
optimizer step (``run_dir/checkpoints/step-N``, ``StagedWeights.stage``). The call for step ``s`` (0-based) waits
for its own groups, then, with no group generating, loads the newest saved checkpoint on every engine (pause →
``update_weights_from_disk`` → continue, weight version ``N``), then submits the groups of step ``s + k``. So every
session of step ``s`` is sampled by the weights of step ``max(s - k, 0)`` (version ``default`` for 0), whatever
the timing; generation of the next step still overlaps training. With ``k >= 2`` the groups of steps
``s+1 .. s+k-1`` must also be back before the push (one engine serves one weight version at a time). A step
whose prompts differ from what was submitted ahead submits its own (logged; its staleness is then not exact).
With ``trainer.dynamic_sampling`` a step's groups without reward variance are replaced by fresh ones (``refill``).

In-flight updates (``trainer.staleness = "in_flight"``): ``groups_per_step * (k + 1)`` groups are kept generating,
in ``schedule`` order; each call pushes the staged checkpoint at once without pausing (each engine loads it between
calls; the sessions in flight go on under it), tops the pool up, and trains on the first ``groups_per_step``
groups back, whatever TRL's prompts say. Each token keeps the version that sampled it; tokens more than ``k``
versions behind the trainer are dropped or masked by session (``inflight``, counted in the step's ``counts``).
Which groups a step trains on then depends on timing: not reproducible token for token.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from polar_hpc.config.run import TrainerConfig
from polar_hpc.log import get_logger
from polar_hpc.train.async_client import AsyncConfig, AsyncRollouts, Group
from polar_hpc.train.grpo.batch import Completion, GroupCounts, StepRollouts, group_completions, rollout_output
from polar_hpc.train.grpo.inflight import StaleBound
from polar_hpc.train.grpo.refill import Built, RefillOrder, fill_step
from polar_hpc.train.grpo.weights import StagedWeights
from polar_hpc.wire.session import Task

log = get_logger("train")
T = TypeVar("T")


def scheduled_groups(cfg: TrainerConfig) -> int:
    """How many groups of the schedule are submitted: each step's own (exact staleness), or ``k`` steps more, which
    keep the in-flight pool full through the last step."""
    extra = cfg.max_off_policy_steps if cfg.staleness == "in_flight" else 0
    return (cfg.steps + extra) * cfg.groups_per_step


def unique_prompts(prompts: list[Any], num_generations: int) -> list[str]:
    """The task ids of a TRL batch: ``prompts`` is each id repeated ``num_generations`` times in a row."""
    ids = [str(p) for p in prompts[::num_generations]]
    expanded = [i for i in ids for _ in range(num_generations)]
    if [str(p) for p in prompts] != expanded:
        raise ValueError(f"rollout_func expects each task id {num_generations} times in a row, got {prompts!r}")
    return ids


class LiveRollouts:
    """A TRL ``rollout_func`` (``__call__(prompts, trainer)``) backed by ``AsyncRollouts`` on ``run_dir``; see the
    module docstring for when weights are pushed and groups submitted."""

    def __init__(self, run_dir: str | Path, tasks: list[Task], cfg: TrainerConfig, *, num_generations: int,
                 filler_id: int, schedule: list[str], min_group_fraction: float | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.tasks = {t.task_id: t for t in tasks}
        self.cfg = cfg
        self.num_generations = num_generations
        self.filler_id = filler_id
        self.schedule = schedule
        self.min_group_fraction = cfg.min_group_fraction if min_group_fraction is None else min_group_fraction
        self.per_step = cfg.groups_per_step
        self.in_flight = cfg.staleness == "in_flight"
        # groups are never dropped for staleness here: they are submitted at most max_off_policy_steps ahead
        # (exact), or bounded per token when their rows are built (in flight)
        ahead = cfg.steps + 1 if self.in_flight else cfg.max_off_policy_steps
        self.ro = AsyncRollouts(self.run_dir, AsyncConfig(max_off_policy_steps=ahead, min_group_fraction=0.0))
        self.weights = StagedWeights(self.update_policy)
        self.last: StepRollouts | None = None
        self.interruptible: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext
        """Wraps each call's wait for its groups (``stop.Stopper.waiting``: a signal there stops at once)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="polar-rollouts", daemon=True)
        self._ready: dict[str, Group] = {}
        self._planned: dict[int, tuple[list[str], list[str]]] = {}
        self._collected: dict[int, tuple[list[str], StepRollouts]] = {}
        self._calls = 0
        self._changed: asyncio.Event | None = None
        self._consumer: asyncio.Task[None] | None = None
        self.refills = RefillOrder(sorted(self.tasks), cfg.seed + 1)
        self._refilled = 0
        self._pool: list[str] = []
        """In flight: groups submitted and not yet trained on, in submission order."""
        self._next = 0
        """In flight: the index in ``schedule`` of the next group to submit."""

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self) -> LiveRollouts:
        self._thread.start()
        self._run(self._start())
        return self

    async def _start(self) -> None:
        await self.ro.__aenter__()
        self._changed = asyncio.Event()
        self._consumer = asyncio.create_task(self._consume())

    async def _consume(self) -> None:
        assert self._changed is not None
        try:
            async for g in self.ro.groups():
                self._ready[g.group_id] = g
                self._changed.set()
        finally:
            self._changed.set()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        if self._pool:
            log.info("%d groups still in flight at the end of training, not trained on", len(self._pool))
        self._run(self._stop(), timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _stop(self) -> None:
        if self._consumer is not None:
            self._consumer.cancel()
            await asyncio.gather(self._consumer, return_exceptions=True)
        await self.ro.__aexit__()

    async def _submit(self, step: int, ids: list[str]) -> list[str]:
        missing = [i for i in ids if i not in self.tasks]
        if missing:
            raise ValueError(f"rollout_func: prompts name no task of the recipe: {missing[:5]}")
        return await self.ro.submit_groups([self.tasks[i] for i in ids], rollout_step=step,
                                           num_samples=self.num_generations)

    async def _wait(self, gids: list[str], timeout_s: float) -> None:
        """Until every group of ``gids`` is back (kept in ``_ready``)."""
        assert self._changed is not None and self._consumer is not None
        deadline = time.monotonic() + timeout_s
        while True:
            missing = [g for g in gids if g not in self._ready]
            if not missing:
                return
            dropped = [g for g in missing if not self.ro.is_open(g)]
            if dropped:
                raise RuntimeError(f"groups {dropped} were dropped by the rollout client ({self.ro.stats})")
            if self._consumer.done():
                self._consumer.result()
                raise RuntimeError(f"the run's result stream ended with groups {missing} outstanding")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"groups {missing} not back {timeout_s:.0f}s after submission "
                                   f"(trainer.group_timeout_s)")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                pass

    def planned_ids(self, step: int) -> list[str]:
        n = self.per_step
        return self.schedule[step * n:(step + 1) * n]

    def _submit_ahead(self, step: int) -> None:
        for ahead in range(step + 1, step + 1 + self.cfg.max_off_policy_steps):
            nxt = self.planned_ids(ahead)
            if ahead not in self._planned and nxt:
                self._planned[ahead] = (nxt, self._run(self._submit(ahead, nxt)))

    def _outstanding(self) -> list[str]:
        return [g for _, gids in self._planned.values() for g in gids]

    def _collect(self, step: int, ids: list[str]) -> StepRollouts:
        """Step ``step``'s groups as TRL rows; pushes the staged checkpoint once no group is generating."""
        if self.in_flight:
            return self._collect_in_flight(step)
        t0 = time.monotonic()
        push_s = 0.0
        planned = self._planned.pop(step, None)
        if planned is not None and planned[0] == ids:
            gids = planned[1]
        else:
            if planned is not None:
                log.warning("step %d: TRL asked for %s, %s was submitted ahead; submitting now (its weight version "
                            "is the newest, not exactly %d steps old)", step, ids, planned[0],
                            self.cfg.max_off_policy_steps)
            if self.weights.pending:
                self._run(self._wait(self._outstanding(), self.cfg.group_timeout_s))
                push_s += self.weights.push()
            gids = self._run(self._submit(step, ids))
        if not self.weights.pending:  # the groups ahead get the weights they would get after the wait
            self._submit_ahead(step)
        self._run(self._wait(gids, self.cfg.group_timeout_s))
        if self.weights.pending:
            self._run(self._wait(self._outstanding(), self.cfg.group_timeout_s))  # k >= 2 only
            push_s += self.weights.push()
        self._submit_ahead(step)
        group_s = self._group_s(gids)
        built = [self._built(g) for g in gids]
        refill = None
        if self.cfg.dynamic_sampling:
            built, refill = fill_step(built, want=len(gids), budget=self.cfg.max_refill_groups, step=step,
                                      fetch=lambda n: self._fetch_fresh(step, n))
        rows: list[Completion] = []
        counts = GroupCounts()
        for r, c in built:
            rows += r
            counts.add(c)
        return StepRollouts(rows=rows, counts=counts, wait_s=time.monotonic() - t0 - push_s, push_s=push_s,
                            refill=refill, group_s=group_s)

    def _group_s(self, gids: list[str]) -> float:
        """Mean time from submission to the last session back of these groups (back, not yet built)."""
        spans = [self._ready[g].finished_at - self._ready[g].submitted_at for g in gids]
        return sum(spans) / len(spans) if spans else 0.0

    def _built(self, gid: str, bound: StaleBound | None = None) -> Built:
        return group_completions(self._ready.pop(gid), filler_id=self.filler_id,
                                 min_group_fraction=self.min_group_fraction, bound=bound, timeouts=self.cfg.timeouts)

    def _collect_in_flight(self, step: int) -> StepRollouts:
        """The first ``groups_per_step`` groups back as TRL rows, after pushing the staged checkpoint without
        waiting and topping the pool up (module docstring)."""
        t0 = time.monotonic()
        push_s = self.weights.push()
        want = self.per_step * (1 + self.cfg.max_off_policy_steps)
        while len(self._pool) < want and self._next < len(self.schedule):
            n = min(want - len(self._pool), len(self.schedule) - self._next)
            for k in range(n):  # one submission per planned step (group ids are unique per step)
                idx = self._next + k
                self._pool += self._run(self._submit(idx // self.per_step, [self.schedule[idx]]))
            self._next += n
        gids = self._run(self._first_back(self.per_step, self.cfg.group_timeout_s))
        bound = StaleBound(now=step, max_lag=self.cfg.max_off_policy_steps, policy=self.cfg.stale_sessions)
        group_s = self._group_s(gids)
        rows: list[Completion] = []
        counts = GroupCounts()
        for g in gids:
            self._pool.remove(g)
            r, c = self._built(g, bound)
            rows += r
            counts.add(c)
        log.debug("step %d: trains on %s", step, gids)
        return StepRollouts(rows=rows, counts=counts, wait_s=time.monotonic() - t0 - push_s, push_s=push_s,
                            group_s=group_s)

    async def _first_back(self, n: int, timeout_s: float) -> list[str]:
        """The first ``n`` groups of the pool back (in the order they came back), or all the pool has left."""
        assert self._changed is not None and self._consumer is not None
        deadline = time.monotonic() + timeout_s
        while True:
            back = [g for g in self._ready if g in self._pool]
            if len(back) >= min(n, len(self._pool)):
                return back[:n]
            lost = [g for g in self._pool if g not in self._ready and not self.ro.is_open(g)]
            if lost:
                raise RuntimeError(f"groups {lost} were dropped by the rollout client ({self.ro.stats})")
            if self._consumer.done():
                self._consumer.result()
                raise RuntimeError(f"the run's result stream ended with groups {self._pool} outstanding")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{n - len(back)} of {len(self._pool)} groups in flight not back after "
                                   f"{timeout_s:.0f}s (trainer.group_timeout_s)")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    def _fetch_fresh(self, step: int, n: int) -> list[Built]:
        """``n`` fresh groups for step ``step`` (dynamic sampling), evaluated."""
        self._refilled += 1
        gids = self._run(self.ro.submit_groups([self.tasks[i] for i in self.refills.take(n)], rollout_step=step,
                                               num_samples=self.num_generations, suffix=f"~refill{self._refilled}"))
        self._run(self._wait(gids, self.cfg.group_timeout_s))
        return [self._built(g) for g in gids]

    def prefetch(self) -> StepRollouts:
        """Collect the first step's groups now (TRL's first call then takes them): the trainer is built with the
        temperature they were sampled at."""
        ids = self.planned_ids(0)
        got = self._collect(0, ids)
        self._collected[0] = (ids, got)
        return got

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        ids = unique_prompts(prompts, self.num_generations)
        step = self._calls
        self._calls += 1
        done = self._collected.pop(step, None)
        if done is not None and done[0] == ids:
            self.last = done[1]
        else:
            with self.interruptible():
                self.last = self._collect(step, ids)
        return rollout_output(self.last.rows)

    def update_policy(self, checkpoint: Path, version: int) -> None:
        self._run(self.ro.update_policy(checkpoint, version, pause=not self.in_flight))

    def push_staged(self) -> float:
        """Load the newest saved checkpoint now (after training: the engines serve the final weights)."""
        if not self.in_flight:
            self._run(self._wait(self._outstanding(), self.cfg.group_timeout_s))
        return self.weights.push()


