"""Train/test split by task, stratified by repository (largest-remainder quotas, seeded)."""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable

import numpy as np


def split_tasks(task_repo: Iterable[tuple[str, str]], test_fraction: float, seed: int = 0) -> dict[str, str]:
    """``task_id -> "train" | "test"``. Every sample of a task lands in one split; each repository gives
    ``test_fraction`` of its tasks to test, rounded so the total is ``round(test_fraction * tasks)``."""
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    tasks: dict[str, set[str]] = defaultdict(set)
    for task, repo in task_repo:
        tasks[repo].add(task)
    repos = sorted(tasks)
    quota = {r: test_fraction * len(tasks[r]) for r in repos}
    n_test = {r: int(quota[r]) for r in repos}
    extra = round(test_fraction * sum(len(t) for t in tasks.values())) - sum(n_test.values())
    for r in sorted(repos, key=lambda r: (-(quota[r] - n_test[r]), r))[:max(0, extra)]:
        n_test[r] += 1
    out: dict[str, str] = {}
    for r in repos:
        ordered = sorted(tasks[r])
        perm = np.random.default_rng([seed, zlib.crc32(r.encode())]).permutation(len(ordered))
        for rank, i in enumerate(perm.tolist()):
            out[ordered[i]] = "test" if rank < n_test[r] else "train"
    return out
