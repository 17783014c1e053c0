"""The figures of an evaluation: the Wilson score interval of a pass rate and the unbiased pass@k estimator."""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95% interval."""


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes / n`` (Wilson 1927): unlike the normal approximation it stays in
    [0, 1] and is not empty at 0 or n successes. ``(0, 1)`` when ``n`` is 0."""
    if not 0 <= successes <= n:
        raise ValueError(f"expected 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from ``n`` samples of one task, ``c`` of them correct (Chen et al. 2021,
    "Evaluating Large Language Models Trained on Code"): ``1 - C(n - c, k) / C(n, k)``."""
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"expected 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(per_task: Sequence[tuple[int, int]], k: int) -> float | None:
    """pass@k averaged over tasks given ``(n, c)`` per task; tasks with fewer than ``k`` samples are left out
    (None when none has ``k``)."""
    values = [pass_at_k(n, c, k) for n, c in per_task if n >= k]
    return sum(values) / len(values) if values else None
