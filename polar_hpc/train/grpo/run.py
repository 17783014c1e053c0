"""``polar-hpc train grpo``'s body: check the recipe, load the policy, train with TRL against a live run.

Threads: the trainer runs ``trainer.threads`` torch threads with ``OMP_WAIT_POLICY=PASSIVE`` (set by the CLI
before torch loads): on a shared CPU, OpenMP threads that spin between kernels starve the engine and the
sandboxes (torch ran 8x slower on 2 shared cores without it).

Reproducible with a fixed seed (``trainer.seed`` and ``inference.random_seed``): the task order and TRL are seeded
by ``trainer.seed``; every model call samples with a seed derived from ``inference.random_seed`` and the call's
identity (``wire.session.call_seed``), so the engine draws the same tokens whatever the order or batch the calls
reach it in; each step's rollouts come from exactly the weights ``trainer.max_off_policy_steps`` steps old
(``live``); rows reach TRL in task-then-sample order; the trainer scores at the temperature the rollouts were
sampled at (``trainer_temperature``).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polar_hpc.assets import resolve_model
from polar_hpc.config import ConfigError
from polar_hpc.config.run import RunConfig, TrainerConfig
from polar_hpc.evaluate.registry import format_only
from polar_hpc.log import get_logger
from polar_hpc.wire.session import Task

log = get_logger("train")


def check_recipe(cfg: RunConfig, tasks: list[Task]) -> None:
    """Raise ConfigError naming what a GRPO run needs and the recipe lacks."""
    if format_only(cfg.evaluator.name):
        raise ConfigError(f"train grpo: [evaluator] must check the task (e.g. name = \"command\" with a command "
                          f"that tests the answer); the recipe has evaluator.name = {cfg.evaluator.name!r}, "
                          f"which rewards every finished session")
    if not tasks:
        raise ConfigError("train grpo: the recipe has no tasks ([tasks] path = a JSONL file of task rows); "
                          "the trainer draws each step's groups from them")
    if cfg.tasks.num_samples < 2:
        raise ConfigError(f"train grpo: tasks.num_samples is the GRPO group size and must be >= 2, "
                          f"got {cfg.tasks.num_samples}")
    from polar_hpc.train.grpo.credit import check_loss_norm
    from polar_hpc.train.grpo.mismatch import check_correction

    why = check_loss_norm(cfg.trainer.loss_norm, cfg.trainer.loss_type) or check_correction(cfg.trainer.tis_clip,
                                                                                            cfg.trainer.tis_mask)
    if why is not None:
        raise ConfigError(f"train grpo: {why}")
    why = check_staleness(cfg.trainer)
    if why is not None:
        raise ConfigError(f"train grpo: {why}")
    if cfg.trainer.groups_per_step > len(tasks):
        raise ConfigError(f"train grpo: trainer.groups_per_step = {cfg.trainer.groups_per_step} exceeds the "
                          f"{len(tasks)} tasks of {cfg.tasks.path}")


def check_staleness(t: TrainerConfig) -> str | None:
    """Why the staleness settings contradict each other (None: they fit)."""
    if t.staleness == "in_flight" and t.max_off_policy_steps == 0:
        return ("trainer.staleness = 'in_flight' pushes weights while sessions run, but trainer.max_off_policy_steps "
                "= 0 allows no token of an older version; use max_off_policy_steps >= 1 or staleness = 'exact'")
    if t.staleness == "in_flight" and t.dynamic_sampling:
        return ("trainer.dynamic_sampling refills a step's own groups, which trainer.staleness = 'in_flight' does "
                "not have (a step trains on the first groups back); use one of them")
    if t.staleness == "exact" and t.stale_sessions != "drop":
        return (f"trainer.stale_sessions = {t.stale_sessions!r} applies to trainer.staleness = 'in_flight' only "
                "(exact staleness samples every session with one version); set staleness = 'in_flight'")
    return None


def trainer_model_dir(cfg: RunConfig) -> Path:
    spec = cfg.trainer.model or cfg.inference.model
    try:
        return resolve_model(spec)
    except Exception as err:
        raise ConfigError(f"trainer.model: cannot resolve {spec!r}: {err}") from None


def load_policy(model_dir: Path, key: str = "trainer.model") -> tuple[Any, Any]:
    """The model (float32) and tokenizer the trainer trains; ConfigError naming ``key`` and the dir when they do not
    load."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(str(model_dir))
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"{key}: cannot load a causal LM and tokenizer from {model_dir}: {first}") from None
    return model, tok


def schedule(task_ids: list[str], n: int, seed: int) -> list[str]:
    """``n`` task ids: the tasks shuffled with ``seed``, every task once before any repeats."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        perm = list(task_ids)
        rng.shuffle(perm)
        out += perm
    return out[:n]


def trainer_temperature(temperatures: list[float], where: str) -> float:
    """The temperature the trainer computes its logprobs at (TRL's ``temperature``: the fused LM head divides the
    logits by it, fixed when the trainer is built): the one the first step's rollouts were sampled at.

    None recorded: 1 (``/generate``'s default). Several: the lowest, with a warning (the step metrics report every
    mixed step). Greedy (0) rollouts cannot train: ValueError."""
    from polar_hpc.engine.protocol import DEFAULT_TEMPERATURE
    from polar_hpc.reference.model import GREEDY_EPS

    if not temperatures:
        log.warning("%s: no sampling temperature recorded; the trainer scores at %g", where, DEFAULT_TEMPERATURE)
        return DEFAULT_TEMPERATURE
    if len(temperatures) > 1:
        log.warning("%s: rollouts sampled at several temperatures (%s); the trainer scores at %g", where,
                    ", ".join(f"{t:g}" for t in temperatures), temperatures[0])
    if temperatures[0] < GREEDY_EPS:
        raise ValueError(f"{where}: the harness sampled greedily (temperature {temperatures[0]:g}); GRPO needs "
                         "sampled rollouts (a temperature > 0 in the harness's requests, or none: 1)")
    return temperatures[0]


def grpo_args(cfg: RunConfig, output_dir: Path, temperature: float = 1.0, world: int = 1) -> Any:
    """TRL's config: one step = ``groups_per_step`` groups, split evenly across ``world`` processes (``ranks``)."""
    import torch
    from trl import GRPOConfig

    t = cfg.trainer
    g = cfg.tasks.num_samples
    return GRPOConfig(
        output_dir=str(output_dir), per_device_train_batch_size=g * t.groups_per_step // world, num_generations=g,
        gradient_accumulation_steps=1, steps_per_generation=1, num_iterations=1, max_steps=t.steps,
        learning_rate=t.learning_rate, lr_scheduler_type=t.lr_scheduler, beta=t.beta, loss_type=t.loss_type,
        seed=t.seed, shuffle_dataset=False, temperature=temperature,
        max_completion_length=cfg.inference.max_new_tokens, logging_steps=1, save_strategy="no", report_to="none",
        disable_tqdm=True,
        dataloader_pin_memory=False, dataloader_num_workers=0, bf16=False, use_cpu=not torch.cuda.is_available(),
    )


def train_grpo(cfg: RunConfig, run_dir: Path, tasks: list[Task], *, model: Any, tokenizer: Any, model_dir: Path,
               report: Callable[[Any], None] | None = None, stopper: Any = None, ranks: Any = None) -> Any:
    """Train ``cfg.trainer.steps`` GRPO steps on the running run ``run_dir``; returns the TRL trainer.

    ``stopper`` (``stop.Stopper``): a signal ends training at a step boundary (``stop``); the last checkpoint is
    then not loaded on the engines (the run is about to be cancelled). ``ranks`` (``ranks.Ranks``): with several
    trainer processes, rank 0 alone talks to the run; the others train on their slice of its rows."""
    import torch
    from datasets import Dataset
    from transformers import PrinterCallback

    from polar_hpc.inference.server import SGLANG_DETERMINISTIC, seeds_honoured
    from polar_hpc.train.grpo.batch import row_temperatures, session_reward
    from polar_hpc.train.grpo.live import LiveRollouts, scheduled_groups
    from polar_hpc.train.grpo.metrics import TRAINER_DIR
    from polar_hpc.train.grpo.ranks import RankedRollouts, Ranks, agree_stop, check_in_sync
    from polar_hpc.train.grpo.stop import StopAtStep, Stopped, Stopper
    from polar_hpc.train.grpo.tis import TisGRPOTrainer
    from polar_hpc.train.grpo.weights import PushWeights

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    t = cfg.trainer
    torch.set_num_threads(t.threads)
    if cfg.inference.random_seed is None:
        log.warning("inference.random_seed is not set: model calls are not seeded and the run is not reproducible")
    elif seeds_honoured(cfg.inference) is False:
        log.warning("SGLang ignores each call's sampling seed without %s (inference.extra_args): the run is not "
                    "reproducible", SGLANG_DETERMINISTIC)
    started = time.monotonic()
    order = schedule([x.task_id for x in tasks], scheduled_groups(t), t.seed)
    filler = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ranks = ranks or Ranks()
    stopper = stopper or Stopper(rank=ranks.rank)
    rollouts = None
    if ranks.main:
        rollouts = LiveRollouts(run_dir, tasks, t, num_generations=cfg.tasks.num_samples, filler_id=int(filler),
                                schedule=order).start()
        rollouts.interruptible = stopper.waiting
    try:
        first: tuple[str, Any] | None = None
        if rollouts is not None:
            try:
                with stopper.waiting():
                    got = rollouts.prefetch()
                first = ("ok", trainer_temperature(row_temperatures(got.rows), "step 1"))
            except Stopped as err:
                first = ("stop", err.signum)
            except Exception as err:
                ranks.share(("error", f"{type(err).__name__}: {err}"))
                raise
        kind, value = ranks.share(first)
        if kind == "stop":
            raise Stopped(value)
        if kind == "error":
            raise RuntimeError(f"rank 0: {value}")
        temperature = float(value)
        trainer = TisGRPOTrainer(
            model=model, reward_funcs=[session_reward],
            args=grpo_args(cfg, run_dir / TRAINER_DIR, temperature, ranks.world),
            train_dataset=Dataset.from_dict({"prompt": order[:t.steps * t.groups_per_step]}),
            processing_class=tokenizer,
            rollout_func=rollouts if ranks.world == 1 else RankedRollouts(rollouts, ranks),
            tis_clip=t.tis_clip, tis_level=t.tis_level, tis_mask=t.tis_mask, loss_norm=t.loss_norm,
            micro_batch_tokens=t.micro_batch_tokens,
        )
        trainer.remove_callback(PrinterCallback)  # the step line comes from ``report``
        if rollouts is not None:
            trainer.add_callback(PushWeights(rollouts, trainer, base_model=model_dir, keep=t.keep_checkpoints,
                                             temperature=temperature, report=report, started=started,
                                             stopper=stopper))
        trainer.add_callback(StopAtStep(stopper, agree=agree_stop if ranks.world > 1 else None))
        trainer.train()
        if ranks.world > 1:
            check_in_sync(model, ranks)
        return trainer
    finally:
        if rollouts is not None:
            rollouts.close()
