"""Stragglers: exact staleness vs in-flight weight updates on a long-tailed workload, side by side, same seeds.

Workload: ``recipes/local-grpo-stragglers.toml`` (SmolLM2 on the reference server, the shell harness making two
chat calls a session with a think time between them drawn per session from a lognormal with p99/p50 = 10, seeded
by the session's key, so both modes see the same session lengths; reward on the last reply). Each mode is
``polar-hpc train grpo`` with the same seed and steps, one after the other (never at once: they would share the
CPUs):

  exact        trainer.staleness = exact: a step waits for its own groups; pushes with no group generating
  in_flight    trainer.staleness = in_flight: pushes while sessions run, a step trains on the first groups back

Per mode, from ``RUN/trainer/steps.jsonl``: the trainer's idle share (its waits for rollouts and weight pushes
over the sum of its step times, the first step included: it waits for the first rollouts too; and over steps 2..,
without the run's warm-up), the median step time (steps 2..: the first also builds the trainer) and of its part
spent training (the step less waits and pushes: on a shared CPU it grows when generation runs beside it), the wall
time of all steps, the mean reward of the first and last 5 steps, and what in-flight updates counted (sessions
spanning versions, stale sessions dropped / masked).

    python tools/bench/bench_stragglers.py [--steps 10] [--seed 0] [--modes exact,in_flight] [--work DIR]
        [--json PATH] [--set K=V ...] [--mode-set MODE:K=V ...] [--recipe PATH] [--summarize]
    (--mode-set: an override for one mode only, e.g. in_flight's bound and pool; --summarize: the figures of the
    runs under --work)

``--recipe recipes/local-grpo.toml --steps 60`` compares the two modes' reward curves on the task the CPU curve
learns (one call a session: no tail, so in-flight updates should learn as exact staleness does).
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

from polar_hpc.train.grpo.metrics import StepMetrics, mean_reward, read_steps  # noqa: E402

RECIPE = ROOT / "recipes" / "local-grpo-stragglers.toml"
MODES: dict[str, list[str]] = {
    "exact": ["trainer.staleness=exact"],
    "in_flight": ["trainer.staleness=in_flight"],
}
EDGE = 5
"""Steps averaged at each end of the reward curve."""


def summarize(mode: str, rows: list[StepMetrics], wall_s: float) -> dict[str, Any]:
    """One mode's figures from its step metrics (see the module docstring)."""
    step_s = [m.step_s for m in rows]
    idle = sum(m.wait_s + m.push_s for m in rows)
    k = min(EDGE, len(rows))
    return {
        "mode": mode, "steps": len(rows), "wall_s": round(wall_s, 1), "train_wall_s": round(sum(step_s), 1),
        "idle_share": idle / sum(step_s) if sum(step_s) > 0 else float("nan"),
        "idle_share_after_first": (sum(m.wait_s + m.push_s for m in rows[1:]) / sum(step_s[1:])
                                   if sum(step_s[1:]) > 0 else float("nan")),
        "median_step_s": statistics.median(step_s[1:] or step_s),
        "median_trainer_s": statistics.median([m.step_s - m.wait_s - m.push_s for m in rows[1:] or rows]),
        "reward_first": mean_reward(rows[:k]),
        "reward_last": mean_reward(rows[-k:]),
        "reward": [None if m.reward is None else round(m.reward, 4) for m in rows],
        "trained_sessions": sum(m.counts.trained for m in rows),
        "spanned": sum(m.counts.spanned for m in rows),
        "stale": sum(m.counts.stale for m in rows),
        "stale_tokens": sum(m.counts.stale_tokens for m in rows),
    }


def run_mode(mode: str, work: Path, steps: int, seed: int, extra: list[str], recipe: Path) -> dict[str, Any]:
    sets = [*MODES[mode], f"trainer.steps={steps}", f"trainer.seed={seed}", f"inference.random_seed={seed}", *extra]
    run, wall = train_grpo("bench_stragglers", mode, recipe, work, sets, ROOT)
    return summarize(mode, read_steps(run), wall)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, of: " + ", ".join(MODES))
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--set", action="append", default=[], metavar="K=V", help="a recipe override for every mode")
    ap.add_argument("--mode-set", action="append", default=[], metavar="MODE:K=V",
                    help="a recipe override for one mode (after --set)")
    ap.add_argument("--recipe", type=Path, default=RECIPE, help=f"default: {RECIPE.relative_to(ROOT)}")
    ap.add_argument("--summarize", action="store_true", help="only read the modes' runs already under --work")
    args = ap.parse_args()
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        ap.error(f"--modes: {', '.join(unknown)} is not one of {', '.join(MODES)}")
    per_mode: dict[str, list[str]] = {}
    for item in args.mode_set:
        mode, _, kv = item.partition(":")
        if mode not in MODES or "=" not in kv:
            ap.error(f"--mode-set: expected MODE:K=V with MODE one of {', '.join(MODES)}, got {item!r}")
        per_mode.setdefault(mode, []).append(kv)
    if args.steps < 1:
        ap.error(f"--steps: at least 1, got {args.steps}")
    work = (args.work or ROOT / "runs" / f"bench-stragglers-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.summarize:
        results = [summarize(m, read_steps(work / m), float("nan")) for m in modes]
    else:
        results = [run_mode(m, work, args.steps, args.seed, [*args.set, *per_mode.get(m, [])], args.recipe.resolve())
                   for m in modes]
    base = results[0]
    print(f"\n{'mode':<11}{'steps':>6}{'idle':>7}{'idle 2..':>9}{'median step':>12}{'(train)':>8}{'x step':>8}"
          f"{'steps wall':>11}{'x wall':>8}{'reward first5 -> last5':>24}{'spanned':>9}{'stale':>7}")
    for r in results:
        print(f"{r['mode']:<11}{r['steps']:>6}{100 * r['idle_share']:>6.0f}%{100 * r['idle_share_after_first']:>8.0f}%"
              f"{r['median_step_s']:>11.1f}s{r['median_trainer_s']:>7.1f}s"
              f"{base['median_step_s'] / r['median_step_s']:>8.2f}{r['train_wall_s']:>10.0f}s"
              f"{base['train_wall_s'] / r['train_wall_s']:>8.2f}{r['reward_first']:>14.3f} -> {r['reward_last']:.3f}"
              f"{r['spanned']:>9}{r['stale']:>7}")
    print(f"\nseed {args.seed}; x = {base['mode']}'s time / the mode's (higher: faster); work dir {work}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
        print(f"written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
