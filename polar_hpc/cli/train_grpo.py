"""``polar-hpc train grpo RECIPE``: launch a run from the recipe (or attach to a running one) and train on it.

Without ``--attach`` the command launches the recipe like ``polar-hpc launch`` (its tasks withheld from the
coordinator: the trainer submits them as GRPO groups), trains ``trainer.steps`` steps, then cancels the run (its
shards are committed) unless ``--keep-running``. With ``--attach RUN_DIR`` it trains against a run that is already
up (e.g. a Slurm run launched from a recipe without ``[tasks] path``; the trainer then runs in the user's own job)
and leaves it running. SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 stop training at a step boundary, cancel a launched
run (an attached one goes on) and exit with 128 + the signal (``stop``). Light module: torch, TRL and transformers
load inside ``run``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    g = sub.add_parser("grpo", help="GRPO with TRL on a live run: groups from the recipe's tasks, weights pushed "
                                    "to the engines after every step")
    g.add_argument("recipe", help="recipe TOML with [tasks], a task-checking [evaluator] and [trainer]")
    g.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe value, e.g. --set trainer.steps=5 (repeatable)")
    g.add_argument("--run-dir", help="run directory to create (default: runs/<name>-<timestamp>)")
    g.add_argument("--attach", metavar="RUN_DIR", help="train against this running run instead of launching one")
    g.add_argument("--keep-running", action="store_true", help="leave the launched run up after training")
    g.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads (see polar_hpc.train.grpo.run)
    from polar_hpc.train.grpo.stop import Stopped, Stopper

    stopper = Stopper(rank=int(os.environ.get("RANK", "0"))).install()
    try:
        return _run(args, stopper)
    except Stopped as err:  # before a run was launched: nothing to cancel
        return err.exit_code
    finally:
        stopper.restore()


def _run(args: argparse.Namespace, stopper: Any) -> int:
    import warnings

    from transformers.utils import logging as hf_logging

    from polar_hpc.config import ConfigError, load_recipe
    from polar_hpc.log import get_logger
    from polar_hpc.tasks.source import iter_tasks
    from polar_hpc.train.grpo.launched import launch_run, wait_until_up
    from polar_hpc.train.grpo.ranks import Ranks, check_ranks
    from polar_hpc.train.grpo.run import check_recipe, load_policy, train_grpo, trainer_model_dir
    from polar_hpc.train.grpo.stop import Stopped
    from polar_hpc.wire.rundir import RunDir

    log = get_logger("train")
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()  # its warnings (deprecations, unused weights) are not the user's to act on
    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")
    with stopper.waiting():  # nothing launched yet: a signal ends here
        cfg = load_recipe(args.recipe, args.overrides)
        tasks = list(iter_tasks(cfg))
        check_recipe(cfg, tasks)
        ranks = Ranks.from_env(cfg)
        check_ranks(cfg, ranks.world)
        model_dir = trainer_model_dir(cfg)
        model, tok = load_policy(model_dir)
    if not ranks.main:
        return _follow(args, cfg, tasks, model, tok, model_dir, ranks, stopper)
    try:
        if args.attach:
            run_dir = RunDir(args.attach)
            if not run_dir.exists():
                raise ConfigError(f"--attach {args.attach}: not a polar-hpc run directory")
        else:  # a first signal during the launch is taken right after it (the run is then cancelled)
            run_dir = launch_run(cfg, args.run_dir)
    except BaseException as err:
        ranks.share(("error", str(err)))
        raise
    ranks.share(("ok", str(run_dir.root)))
    out = sys.stdout
    t = cfg.trainer
    out.write(f"run dir: {run_dir.root}\npolicy: {model_dir}  groups/step {t.groups_per_step} x "
              f"{cfg.tasks.num_samples} sessions  steps {t.steps}  off-policy <= {t.max_off_policy_steps}"
              f"{f'  trainer processes {ranks.world}' if ranks.world > 1 else ''}\n")
    out.flush()
    from polar_hpc.train.grpo.metrics import mean_reward, pool_hint, read_steps, step_line, steps_path
    from polar_hpc.train.grpo.weights import WeightPushError

    def report(m: Any) -> None:
        out.write(step_line(m) + "\n")
        out.flush()

    rc = 0
    t0 = time.monotonic()
    try:
        with stopper.waiting():
            wait_until_up(run_dir.root, cfg)
        train_grpo(cfg, run_dir.root, tasks, model=model, tokenizer=tok, model_dir=model_dir, report=report,
                   stopper=stopper, ranks=ranks)
        rc = stopper.state.exit_code
    except Stopped as err:
        rc = err.exit_code
    except (WeightPushError, TimeoutError, RuntimeError, ValueError) as err:
        sys.stderr.write(f"polar-hpc train grpo: {err}\n")
        rc = 1
    finally:
        stopper.cancelling()
        if args.attach:
            if stopper.state.requested:
                log.warning("the attached run %s goes on (polar-hpc cancel %s stops it)", run_dir.root, run_dir.root)
        elif not args.keep_running or stopper.state.requested:
            from polar_hpc.launch.monitor import cancel_run

            if stopper.state.requested:
                log.warning("cancelling the launched run %s (its shards commit)", run_dir.root)
            cancel_run(run_dir)
        ranks.barrier()  # the other ranks wait for the cancel
    steps = read_steps(run_dir.root)
    if steps:
        k = min(5, len(steps))
        first, last = mean_reward(steps[:k]), mean_reward(steps[-k:])
        out.write(f"{len(steps)} steps in {time.monotonic() - t0:.0f}s: reward {first:.3f} (first {k}) -> "
                  f"{last:.3f} (last {k}); metrics {steps_path(run_dir.root)}; plots: polar-hpc report "
                  f"{run_dir.root}\n")
        hint = pool_hint(steps, cfg.trainer, cfg.tasks.num_samples)
        if hint:
            out.write(f"hint: {hint}\n")
    return rc


def _follow(args: argparse.Namespace, cfg: Any, tasks: Any, model: Any, tok: Any, model_dir: Path, ranks: Any,
            stopper: Any) -> int:
    """A rank other than 0: trains on its slice of rank 0's rows (``ranks``), then waits for rank 0's cancel."""
    from polar_hpc.train.grpo.run import train_grpo
    from polar_hpc.train.grpo.stop import Stopped

    kind, value = ranks.share(None)
    if kind == "error":
        return 1
    rc = 0
    try:
        train_grpo(cfg, Path(value), tasks, model=model, tokenizer=tok, model_dir=model_dir, stopper=stopper,
                   ranks=ranks)
        rc = stopper.state.exit_code
    except Stopped as err:
        rc = err.exit_code
    except (TimeoutError, RuntimeError, ValueError) as err:
        sys.stderr.write(f"polar-hpc train grpo (rank {ranks.rank}): {err}\n")
        rc = 1
    finally:
        stopper.cancelling()
        ranks.barrier()
    return rc
