"""Two evaluations of one task file compared task by task: which tasks each model passes that the other does not.

Two models measured on the same tasks (SFT and SFT+GRPO on the held-out split) are paired samples: comparing
their Wilson intervals wastes the pairing, and at 60 tasks two intervals overlap long after the models differ.
Per harness, over the tasks both runs measured: each run's pass@1, the difference, the tasks where the second run's
pass rate is higher (``better``) and lower (``worse``), and the exact two-sided sign test of those counts (with one
sample a task, McNemar's exact test): the chance of a split at least this uneven if neither model were better.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import msgspec

from polar_hpc.measure.eval import EvalRow

TEST = "exact two-sided sign test over the tasks whose pass rate differs; McNemar's exact test at one sample a task"


class PairedRow(msgspec.Struct, kw_only=True):
    harness: str
    base: str
    """The run compared against (its run dir)."""
    other: str
    base_model: str
    other_model: str
    tasks: int
    """Tasks both runs measured."""
    base_pass_at_1: float
    other_pass_at_1: float
    diff: float
    """``other_pass_at_1 - base_pass_at_1`` over those tasks."""
    better: int
    worse: int
    p_value: float


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact binomial test of ``better`` against ``worse`` at p = 1/2 (1.0 when both are 0)."""
    if better < 0 or worse < 0:
        raise ValueError(f"expected counts >= 0, got better={better}, worse={worse}")
    n, low = better + worse, min(better, worse)
    tail = Fraction(sum(math.comb(n, i) for i in range(low + 1)), 1 << n)  # exact at any number of tasks
    return min(1.0, float(2 * tail))


def compare(base: Sequence[EvalRow], other: Sequence[EvalRow]) -> list[PairedRow]:
    """One row per harness both measured, over the task ids both measured (none: no row)."""
    rows = []
    for x in base:
        for y in other:
            shared = sorted(set(x.task_passes) & set(y.task_passes))
            if x.harness != y.harness or not shared:
                continue
            a = [sum(x.task_passes[t]) / len(x.task_passes[t]) for t in shared]
            b = [sum(y.task_passes[t]) / len(y.task_passes[t]) for t in shared]
            better = sum(1 for u, v in zip(a, b, strict=True) if v > u)
            worse = sum(1 for u, v in zip(a, b, strict=True) if v < u)
            pa, pb = sum(a) / len(shared), sum(b) / len(shared)
            rows.append(PairedRow(harness=x.harness, base=x.run_dir, other=y.run_dir, base_model=x.model,
                                  other_model=y.model, tasks=len(shared),
                                  base_pass_at_1=pa, other_pass_at_1=pb, diff=pb - pa, better=better, worse=worse,
                                  p_value=sign_test(better, worse)))
    return rows


def paired_table(rows: list[PairedRow]) -> str:
    lines = [f"paired, each run against the first, on the tasks both measured ({TEST}):"]
    for r in rows:
        lines.append(f"{r.harness:<16} {_label(r.other_model, r.other)} vs {_label(r.base_model, r.base)}: "
                     f"{r.tasks} tasks  {r.base_pass_at_1:.3f} -> {r.other_pass_at_1:.3f} ({r.diff:+.3f})  "
                     f"better on {r.better}, worse on {r.worse}  p = {r.p_value:.3g}")
    return "\n".join(lines)


def _label(model: str, run_dir: str) -> str:
    """The model's last path parts and the run's name: ``grpo/checkpoints/step-3 (distill-pi-eval-...)``."""
    return f"{'/'.join(model.split('/')[-3:])} ({run_dir.rstrip('/').rsplit('/', 1)[-1]})"
