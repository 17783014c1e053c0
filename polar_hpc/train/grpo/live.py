"""TRL's ``rollout_func`` on a running polar-hpc run, and the callback that pushes weights after every step.

``LiveRollouts`` owns an ``AsyncRollouts`` on a background event loop. TRL hands it the prompts of a step: task
ids (the dataset's ``prompt`` column), each repeated ``num_generations`` times; each task becomes one submitted
group of ``num_generations`` sessions. With ``trainer.max_off_policy_steps = k > 0`` the groups of the next ``k``
steps are submitted before this step waits and trains (the dataset is in ``schedule`` order, which TRL keeps with
``shuffle_dataset=False``); a step whose prompts differ from what was submitted ahead submits its own (logged).
``PushWeights`` saves the model after every optimizer step under ``run_dir/checkpoints/step-N`` and loads it on
every engine as weight version ``N`` (``AsyncRollouts.update_policy``).
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from transformers import TrainerCallback

from polar_hpc.config.run import TrainerConfig
from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.train.async_client import AsyncConfig, AsyncRollouts, Group
from polar_hpc.train.grpo.batch import Completion, GroupCounts, group_completions, rollout_output
from polar_hpc.train.grpo.metrics import CHECKPOINTS, StepMetrics, append_step
from polar_hpc.wire.records import Task

log = get_logger("train")
T = TypeVar("T")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


class WeightPushError(PolarError, RuntimeError):
    """The engines did not load a new checkpoint; the checkpoint stays on disk."""

    exit_code = 1


class StepRollouts(msgspec.Struct, kw_only=True):
    """What the last ``rollout_func`` call returned, for the step's metrics."""

    rows: list[Completion]
    counts: GroupCounts
    wait_s: float


def unique_prompts(prompts: list[Any], num_generations: int) -> list[str]:
    """The task ids of a TRL batch: ``prompts`` is each id repeated ``num_generations`` times in a row."""
    ids = [str(p) for p in prompts[::num_generations]]
    expanded = [i for i in ids for _ in range(num_generations)]
    if [str(p) for p in prompts] != expanded:
        raise ValueError(f"rollout_func expects each task id {num_generations} times in a row, got {prompts!r}")
    return ids


class LiveRollouts:
    """A TRL ``rollout_func`` (``__call__(prompts, trainer)``) backed by ``AsyncRollouts`` on ``run_dir``."""

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
        # groups are never dropped for staleness here: they are submitted at most max_off_policy_steps ahead
        self.ro = AsyncRollouts(self.run_dir, AsyncConfig(max_off_policy_steps=cfg.max_off_policy_steps,
                                                          min_group_fraction=0.0))
        self.last: StepRollouts | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="polar-rollouts", daemon=True)
        self._ready: dict[str, Group] = {}
        self._planned: dict[int, tuple[list[str], list[str]]] = {}
        self._calls = 0
        self._changed: asyncio.Event | None = None
        self._consumer: asyncio.Task[None] | None = None

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

    async def _wait(self, gids: list[str], timeout_s: float) -> list[Group]:
        assert self._changed is not None and self._consumer is not None
        deadline = time.monotonic() + timeout_s
        while True:
            missing = [g for g in gids if g not in self._ready]
            if not missing:
                return [self._ready.pop(g) for g in gids]
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

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        t0 = time.monotonic()
        ids = unique_prompts(prompts, self.num_generations)
        step = self._calls
        self._calls += 1
        planned = self._planned.pop(step, None)
        if planned is not None and planned[0] == ids:
            gids = planned[1]
        else:
            if planned is not None:
                log.warning("step %d: TRL asked for %s, %s was submitted ahead; submitting now", step, ids,
                            planned[0])
            gids = self._run(self._submit(step, ids))
        for ahead in range(step + 1, step + 1 + self.cfg.max_off_policy_steps):
            nxt = self.planned_ids(ahead)
            if ahead not in self._planned and nxt:
                self._planned[ahead] = (nxt, self._run(self._submit(ahead, nxt)))
        groups = self._run(self._wait(gids, self.cfg.group_timeout_s))
        rows: list[Completion] = []
        counts = GroupCounts()
        for g in groups:
            r, c = group_completions(g, filler_id=self.filler_id, min_group_fraction=self.min_group_fraction)
            rows += r
            counts.add(c)
        self.last = StepRollouts(rows=rows, counts=counts, wait_s=time.monotonic() - t0)
        return rollout_output(rows)

    def update_policy(self, checkpoint: Path, version: int) -> None:
        self._run(self.ro.update_policy(checkpoint, version))


def save_checkpoint(model: Any, base: Path, out: Path) -> Path:
    """``model``'s weights and config in ``out``, with ``base``'s other files (tokenizer, chat template)."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    for f in base.iterdir():
        if f.is_file() and not f.name.endswith(WEIGHT_SUFFIXES) and not (tmp / f.name).exists():
            shutil.copy(f, tmp / f.name)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


class PushWeights(TrainerCallback):
    """After every optimizer step: save, ``push`` (load on every engine), record and report the step's metrics.

    A failed push raises ``WeightPushError`` naming the step and the checkpoint (left on disk)."""

    def __init__(self, run_dir: Path, *, push: Callable[[Path, int], None], last: Callable[[], StepRollouts | None],
                 base_model: Path, keep: int, tis: Callable[[], Any],
                 report: Callable[[StepMetrics], None] | None = None) -> None:
        self.run_dir = run_dir
        self.push = push
        self.last = last
        self.base_model = base_model
        self.keep = keep
        self.tis = tis
        self.report = report
        self._t_step = time.monotonic()
        self._step_s = 0.0
        self._push_s = 0.0
        self.pushed = 0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._t_step = time.monotonic()

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
        step = int(state.global_step)
        t0 = time.monotonic()
        ckpt = save_checkpoint(model, self.base_model, self.run_dir / CHECKPOINTS / f"step-{step}")
        try:
            self.push(ckpt, step)
        except Exception as err:
            raise WeightPushError(f"step {step}: the engines did not load {ckpt} (kept on disk): {err}") from err
        self.pushed = step
        old = sorted((p for p in ckpt.parent.glob("step-*") if p.name[5:].isdigit()), key=lambda p: int(p.name[5:]))
        for p in old[:-self.keep]:
            shutil.rmtree(p, ignore_errors=True)
        now = time.monotonic()
        self._push_s = now - t0
        self._step_s, self._t_step = now - self._t_step, now

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        last = self.last()
        if not logs or "loss" not in logs or last is None:
            return
        tis = self.tis()
        trained = [r for r in last.rows if not r.placeholder]
        rewards = [r.reward for r in trained if r.reward is not None]
        m = StepMetrics(
            step=int(state.global_step), reward=sum(rewards) / len(rewards) if rewards else float("nan"),
            loss=float(logs["loss"]),
            logp_diff_mean=tis.logp_diff_mean if tis else float("nan"),
            logp_diff_max=tis.logp_diff_max if tis else float("nan"),
            logp_share_above=tis.agreement.share_above if tis else float("nan"),
            clipped_share=tis.clipped_share if tis else float("nan"),
            rollout_versions=sorted({v for r in trained for v in r.weight_versions}),
            pushed_version=self.pushed, wait_s=last.wait_s, step_s=self._step_s, push_s=self._push_s,
            counts=last.counts,
            time=time.time(),
        )
        append_step(self.run_dir, m)
        log.debug("grpo step %d: %s", m.step, m)
        if self.report is not None:
            self.report(m)
