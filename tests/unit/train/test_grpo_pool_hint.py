"""The hint a run ends with when its trainer waited for rollouts: how many groups in flight would keep it fed
(``metrics.pool_hint``, Little's law on the steps' measured group and training times)."""

from __future__ import annotations

import msgspec

from polar_hpc.config.run import TrainerConfig
from polar_hpc.train.grpo.batch import GroupCounts
from polar_hpc.train.grpo.metrics import StepMetrics, pool_hint


def _timed(i: int, wait_s: float, train_s: float, group_s: float) -> StepMetrics:
    return StepMetrics(step=i, reward=0.5, loss=0.0, logp_diff_mean=0.0, logp_diff_max=0.0, clipped_share=0.0,
                       rollout_versions=[], pushed_version=i, wait_s=wait_s, step_s=wait_s + train_s,
                       group_s=group_s, counts=GroupCounts(sessions=8, trained=8), time=0.0)


def test_a_fed_trainer_gets_no_hint_and_a_starved_one_the_pool_littles_law_asks() -> None:
    # workload C of docs/train.md: groups back ~33 s after submission, a step trains in ~3 s, 2 groups a step
    starved = [_timed(1, 25.0, 3.0, 27.0)] + [_timed(i, 4.0, 3.0, 33.0) for i in range(2, 11)]
    exact = TrainerConfig(groups_per_step=2, max_off_policy_steps=2)
    in_flight = msgspec.structs.replace(exact, staleness="in_flight", max_off_policy_steps=6)
    hint = pool_hint(starved, in_flight, num_samples=4)
    assert hint is not None and "waited 57% of steps 2..10" in hint and "about 22 groups" in hint
    assert "(now 14)" in hint and "trainer.max_off_policy_steps = 10" in hint and "gateway.run_pool >= 88" in hint
    hint = pool_hint(starved, exact, num_samples=4)
    assert hint is not None and 'trainer.staleness = "in_flight"' in hint and "max_off_policy_steps = 10" in hint
    assert "dynamic_sampling" not in hint  # in-flight updates refuse it: said when the run used it
    assert "without trainer.dynamic_sampling" in (pool_hint(starved, msgspec.structs.replace(
        exact, dynamic_sampling=True), num_samples=4) or "")
    # enough in flight already, or fed after the first step (its wait for the first groups does not count)
    assert pool_hint(starved, msgspec.structs.replace(in_flight, max_off_policy_steps=10), 4) is None
    fed = [_timed(1, 25.0, 3.0, 27.0)] + [_timed(i, 0.1, 3.0, 33.0) for i in range(2, 11)]
    assert pool_hint(fed, exact, num_samples=4) is None
    assert pool_hint([msgspec.structs.replace(m, group_s=0.0) for m in starved], exact, 4) is None  # not measured
