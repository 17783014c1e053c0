"""A step whose sessions were all placeholders (failed, untrainable, or dropped as stale by in-flight updates) has no
reward: it is written and read back as such (JSON has no NaN: it was written ``null`` and the read failed, ending an
in-flight run after its last step), printed as ``-``, and left out of the first/last means."""

from __future__ import annotations

import math
from pathlib import Path

from polar_hpc.train.grpo.batch import GroupCounts
from polar_hpc.train.grpo.metrics import StepMetrics, append_step, mean_reward, read_steps, step_line


def _step(i: int, reward: float | None) -> StepMetrics:
    return StepMetrics(step=i, reward=reward, loss=0.0, logp_diff_mean=0.0, logp_diff_max=0.0, clipped_share=0.0,
                       rollout_versions=[],
                       pushed_version=i, wait_s=0.5, step_s=1.0, counts=GroupCounts(sessions=8, trained=0 if
                                                                                   reward is None else 8), time=0.0)


def test_a_step_with_no_trained_session_round_trips_and_prints_a_dash(tmp_path: Path) -> None:
    steps = [_step(1, 0.25), _step(2, None), _step(3, 0.75)]
    for m in steps:
        append_step(tmp_path, m)
    assert read_steps(tmp_path) == steps
    assert "reward -  loss" in step_line(steps[1]) and "reward 0.250  loss" in step_line(steps[0])
    assert mean_reward(steps) == 0.5
    assert math.isnan(mean_reward([steps[1]]))
