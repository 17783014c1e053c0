"""``train grpo`` on several trainer processes (``accelerate launch --num_processes N``: DDP, on CPU with gloo).

TRL calls ``rollout_func`` on every rank with that rank's contiguous slice of the step's rows (its ``RepeatSampler``
keeps each task's ``num_generations`` rows together and in dataset order; advantages are computed over the rows
gathered from every rank, then sliced back). So one process talks to the run and the rows are the same as one
process would train on:

- rank 0 alone launches (or attaches to) the run, submits every group and pushes weights (``LiveRollouts``,
  ``PushWeights``); the other ranks get the run dir, the sampling temperature and each step's rows from it;
- :class:`RankedRollouts` gathers the ranks' prompts on rank 0 (rank order = the one-process order), rank 0 collects
  the whole step, broadcasts the rows and every rank returns its slice; a stop (``stop.Stopped``) or an error on
  rank 0 is broadcast instead, and every rank stops with it;
- at every step end the ranks agree on a stop (:func:`agree_stop`, an all-reduce max of the signal numbers), so
  they all leave at the same step boundary; rank 0 cancels the run, the others wait for it (:func:`barrier`);
- after training :func:`check_in_sync` compares a digest of every rank's weights (DDP keeps them equal: it
  broadcasts rank 0's initial weights and averages the gradients).

Rows per step (``groups_per_step x num_samples``) must divide by the number of processes (``check_ranks``).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from polar_hpc.config import ConfigError
from polar_hpc.config.run import RunConfig
from polar_hpc.log import get_logger

log = get_logger("train")


class Ranks:
    """This process's place among the trainer processes (``PartialState``: the env ``accelerate launch`` sets)."""

    def __init__(self, state: Any = None) -> None:
        self.state = state
        self.rank = 0 if state is None else int(state.process_index)
        self.world = 1 if state is None else int(state.num_processes)

    @classmethod
    def from_env(cls, cfg: RunConfig) -> Ranks:
        """One process: no process group. Several: join theirs, with a timeout that covers rank 0's longest wait
        (the run coming up, then a step's groups) so the other ranks do not give up on it."""
        import os

        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return cls()
        import torch
        from accelerate import PartialState

        wait = cfg.inference.startup_timeout_s + cfg.trainer.group_timeout_s + 600
        return cls(PartialState(cpu=not torch.cuda.is_available(), timeout=timedelta(seconds=wait)))

    @property
    def main(self) -> bool:
        return self.rank == 0

    def share(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        if self.world == 1:
            return value
        from accelerate.utils import broadcast_object_list

        box = [value if self.main else None]
        broadcast_object_list(box, from_process=0)
        return box[0]

    def barrier(self) -> None:
        if self.world > 1:
            self.state.wait_for_everyone()


def check_ranks(cfg: RunConfig, world: int) -> None:
    """ConfigError when a step's rows do not split evenly across ``world`` processes, or its loss weights need the
    whole step on one process."""
    if world > 1 and cfg.trainer.loss_norm != "token":
        raise ConfigError(f"train grpo: trainer.loss_norm = {cfg.trainer.loss_norm!r} weighs rows by their "
                          f"session's or group's share of the whole step, which {world} trainer processes each see "
                          f"a slice of; use loss_norm = 'token' with several processes")
    rows = cfg.trainer.groups_per_step * cfg.tasks.num_samples
    if rows % world:
        raise ConfigError(f"train grpo: a step's {rows} rows (trainer.groups_per_step x tasks.num_samples) do not "
                          f"split across {world} trainer processes; make them a multiple of {world}")


class RankedRollouts:
    """TRL's ``rollout_func`` on every rank: rank 0's ``inner`` (``LiveRollouts``) collects the whole step; each rank
    returns its slice. ``last`` is rank 0's ``StepRollouts`` (``None`` on the others)."""

    def __init__(self, inner: Any, ranks: Ranks) -> None:
        self.inner = inner
        self.ranks = ranks

    @property
    def last(self) -> Any:
        return self.inner.last if self.inner is not None else None

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        from accelerate.utils import gather_object

        from polar_hpc.train.grpo.stop import Stopped

        every = gather_object(list(prompts))  # rank order: the one-process order
        msg: tuple[str, Any] | None = None
        if self.ranks.main:
            try:
                msg = ("rows", self.inner(every, trainer))
            except Stopped as err:
                msg = ("stop", err.signum)
            except Exception as err:
                msg = ("error", f"{type(err).__name__}: {err}")
                self.ranks.share(msg)
                raise
        kind, value = self.ranks.share(msg)
        if kind == "stop":
            raise Stopped(value)
        if kind == "error":
            raise RuntimeError(f"rank 0's rollouts failed: {value}")
        if "advantage" not in value:  # one row a prompt: TRL's own slice
            n = len(prompts)
            lo = self.ranks.rank * n
            return {k: v[lo:lo + n] for k, v in value.items()}
        return rank_slice(value, self.ranks.rank, self.ranks.world)


def rank_slice(rows: dict[str, list[Any]], rank: int, world: int) -> dict[str, list[Any]]:
    """Rank ``rank``'s contiguous share of a step's credit rows (``batch.rollout_output``: one row a chain, so
    not one a prompt), padded to a multiple of ``world`` with rows that train nothing (mask 0, advantage 0, no
    reward): every rank scores as many rows, as TRL's gathers across ranks need."""
    total = len(rows["prompt_ids"])
    per = -(-total // world)
    pad = per * world - total
    if pad:
        blank = {"prompt_ids": rows["prompt_ids"][0][:1], "completion_ids": rows["completion_ids"][0][:1],
                 "logprobs": [0.0], "env_mask": [0], "reward": None, "advantage": 0.0, "versions": [-1], "turns": [-1]}
        rows = {k: v + [blank.get(k, f"pad/{i}" if k == "session" else "pad") for i in range(pad)]
                for k, v in rows.items()}
    return {k: v[rank * per:(rank + 1) * per] for k, v in rows.items()}


def agree_stop(signum: int) -> int:
    """The stop every rank takes at a step end: the highest signal number any rank received (0: none)."""
    import torch
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() == 1:
        return signum
    t = torch.tensor([signum], dtype=torch.int64)
    if dist.get_backend() == "nccl":
        t = t.cuda()
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def weights_digest(model: Any) -> str:
    """sha256 of every parameter's bytes, in name order."""
    import torch

    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def check_in_sync(model: Any, ranks: Ranks) -> str:
    """Every rank's weights digest; RuntimeError when they differ. One process: its digest."""
    if ranks.world > 1 and str(ranks.state.distributed_type).rsplit(".", 1)[-1] in ("FSDP", "DEEPSPEED"):
        return ""  # sharded parameters: each rank holds its own part
    mine = weights_digest(model)
    if ranks.world == 1:
        return mine
    from accelerate.utils import gather_object

    every = gather_object([mine])
    if len(set(every)) != 1:
        raise RuntimeError(f"the trainer ranks' weights differ after training: {every}")
    if ranks.main:
        log.info("weights equal on all %d ranks (sha256 %s)", ranks.world, mine[:16])
    return mine
