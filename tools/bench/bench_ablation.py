"""The paper's ablation through our trainer: the same GRPO steps with ``prefix_merging`` vs ``per_request`` traces.

Workload: ``recipes/local-grpo-multicall.toml`` (SmolLM2 on the reference server, the shell harness holding a
3-call conversation per session, reward on the last reply). Each arm is ``polar-hpc train grpo`` with the same
seed and steps, one after the other (never at once: they would share the CPUs):

  prefix_merging            one chain a session (the calls' shared prefixes merged)
  per_request               one row a call, every row with its session's advantage (loss_norm = token)
  per_request+session       the same rows, every session weighing one (loss_norm = session)
  norm=token|session|group  the recipe's own builder, with that ``trainer.loss_norm`` (issue 35: the default
                            chosen by measurement; ``--recipe recipes/local-grpo.toml`` for a workload that scores)

Per arm, from ``RUN/trainer/steps.jsonl``: the median gradient norm, rows and trainer tokens (prompt + completion,
and the trainable ones)
per step, the median step wall time and the trainer's share of it (the step less its wait for rollouts), the mean
reward of the first and last steps, and the share of rows whose completion is shorter than 4 tokens (the paper's
reward hacking shows as short traces scoring the session's reward). Ratios against prefix_merging.

    python tools/bench/bench_ablation.py [--steps 4] [--seed 0] [--arms prefix_merging,per_request,...]
        [--recipe PATH] [--work DIR] [--json PATH] [--set K=V ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from common import train_grpo  # noqa: E402

from polar_hpc.train.grpo.metrics import mean_reward, read_steps  # noqa: E402

RECIPE = ROOT / "recipes" / "local-grpo-multicall.toml"
ARMS: dict[str, list[str]] = {
    "prefix_merging": ["builder.name=prefix_merging"],
    "per_request": ["builder.name=per_request", "trainer.loss_norm=token"],
    "per_request+session": ["builder.name=per_request", "trainer.loss_norm=session"],
    "norm=token": ["trainer.loss_norm=token"],
    "norm=session": ["trainer.loss_norm=session"],
    "norm=group": ["trainer.loss_norm=group"],
}


def run_arm(name: str, work: Path, steps: int, seed: int, extra: list[str], recipe: Path = RECIPE) -> dict[str, Any]:
    sets = [*ARMS[name], f"trainer.steps={steps}", f"trainer.seed={seed}", f"inference.random_seed={seed}", *extra]
    run, wall = train_grpo("bench_ablation", name, recipe, work, sets, ROOT)
    rows = read_steps(run)
    k = max(1, len(rows) // 2)
    per_step = [m.step_s for m in rows]
    trainer_s = [m.step_s - m.wait_s - m.push_s for m in rows]
    return {
        "arm": name, "steps": len(rows), "wall_s": round(wall, 1),
        "rows_per_step": statistics.mean(m.counts.rows for m in rows),
        "sessions_per_step": statistics.mean(m.counts.trained for m in rows),
        "tokens_per_step": statistics.mean(m.counts.tokens for m in rows),
        "trainable_tokens_per_step": statistics.mean(m.counts.trainable_tokens for m in rows),
        "median_step_s": statistics.median(per_step),
        "median_trainer_s": statistics.median(trainer_s),
        "reward_first": mean_reward(rows[:k]),
        "reward_last": mean_reward(rows[-k:]),
        "short_rows": short_rows(run),
        "grad_norm_median": statistics.median(g) if (g := [m.grad_norm for m in rows if m.grad_norm is not None])
        else None,
        "rewards": [m.reward for m in rows],
        "grad_norms": [m.grad_norm for m in rows],
        "logp_diff_mean": [m.logp_diff_mean for m in rows],
    }


def short_rows(run: Path, shorter_than: int = 4) -> float | None:
    """Share of the run's traces whose trainable tokens (sampled, loss mask 1) number fewer than ``shorter_than``."""
    import h5py
    import numpy as np

    from polar_hpc.store.schema import LOSS_MASK, RESPONSE_OFFSETS

    counts: list[int] = []
    for path in sorted((run / "shards").glob("*.h5")):
        with h5py.File(path, "r") as f:
            offsets, mask = f[RESPONSE_OFFSETS][()], f[LOSS_MASK][()].astype(np.int64)
        counts += [int(mask[a:b].sum()) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    return sum(n < shorter_than for n in counts) / len(counts) if counts else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arms", default=",".join(ARMS), help="comma-separated, of: " + ", ".join(ARMS))
    ap.add_argument("--recipe", type=Path, default=RECIPE)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--set", action="append", default=[], metavar="K=V", help="a recipe override for every arm")
    args = ap.parse_args()
    arms = args.arms.split(",")
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        ap.error(f"--arms: {', '.join(unknown)} is not one of {', '.join(ARMS)}")
    work = (args.work or ROOT / "runs" / f"bench-ablation-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    results = [run_arm(a, work, args.steps, args.seed, args.set, args.recipe.resolve()) for a in arms]
    base = results[0]
    print(f"\n{'arm':<22}{'rows':>6}{'tokens':>8}{'train tok':>10}{'x tokens':>9}{'step s':>8}{'x step':>8}"
          f"{'trainer s':>10}{'reward first->last':>20}{'short':>7}{'grad norm':>10}")
    for r in results:
        short = "-" if r["short_rows"] is None else f"{100 * r['short_rows']:.0f}%"
        print(f"{r['arm']:<22}{r['rows_per_step']:>6.1f}{r['tokens_per_step']:>8.0f}"
              f"{r['trainable_tokens_per_step']:>10.0f}{r['tokens_per_step'] / base['tokens_per_step']:>9.2f}"
              f"{r['median_step_s']:>8.1f}{r['median_step_s'] / base['median_step_s']:>8.2f}"
              f"{r['median_trainer_s']:>10.1f}{r['reward_first']:>10.3f} -> {r['reward_last']:.3f}{short:>7}"
              f"{'-' if r['grad_norm_median'] is None else format(r['grad_norm_median'], '.3g'):>10}")
    print(f"\nper step means over {args.steps} steps (seed {args.seed}); x = ratio to {base['arm']}; "
          f"work dir {work}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
        print(f"written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
