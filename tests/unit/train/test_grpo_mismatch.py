"""The trainer-vs-rollout |Δ logp| of a step split by harness, weight-version lag and turn, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from polar_hpc.train.async_client import TrainSample
from polar_hpc.train.grpo.mismatch import (
    Bucket,
    Mismatch,
    merge,
    ordered,
    sampled_versions,
    split,
    summary_line,
    token_turns,
)
from polar_hpc.wire.traces import TraceStatus

# Two rows, trainer version 3. Row 0 (codex): a 2-call chain, call 0 sampled at v3 (2 tokens), an interstitial
# token, call 1 at v2 (1 token). Row 1 (shell): one call sampled at v1, one token not recorded (-1).
DELTA = np.array([[0.1, -0.3, 9.0, 0.2, 0.0], [0.5, -0.7, 0.4, 0.0, 0.0]])
MASK = np.array([[1, 1, 0, 1, 0], [1, 1, 1, 0, 0]])
VERSIONS = np.array([[3, 3, -1, 2, -1], [1, 1, -1, -1, -1]])
TURNS = np.array([[0, 0, -1, 1, -1], [4, 4, 4, -1, -1]])
MASKED = np.array([[0, 0, 0, 0, 0], [0, 1, 0, 0, 0]], dtype=bool)
CLIPPED = np.array([[0, 0, 0, 1, 0], [1, 0, 0, 0, 0]], dtype=bool)


def test_split_by_harness_lag_and_turn() -> None:
    m = split(DELTA, MASK, harness=["codex", "shell"], versions=VERSIONS, turns=TURNS, trainer_version=3,
              masked=MASKED, clipped=CLIPPED)
    assert m.harness["codex"] == Bucket(tokens=3, mean_abs=pytest.approx(0.2), max_abs=0.3, masked=0, clipped=1)
    assert m.harness["shell"] == Bucket(tokens=3, mean_abs=pytest.approx(1.6 / 3), max_abs=0.7, masked=1, clipped=1)
    assert set(m.lag) == {"0", "1", "2", "unknown"}
    assert m.lag["0"] == Bucket(tokens=2, mean_abs=pytest.approx(0.2), max_abs=0.3)  # v3, trainer at 3
    assert m.lag["1"] == Bucket(tokens=1, mean_abs=pytest.approx(0.2), max_abs=0.2, clipped=1)  # v2
    assert m.lag["2"] == Bucket(tokens=2, mean_abs=pytest.approx(0.6), max_abs=0.7, masked=1, clipped=1)  # v1
    assert m.lag["unknown"] == Bucket(tokens=1, mean_abs=pytest.approx(0.4), max_abs=0.4)
    assert {k: b.tokens for k, b in m.turn.items()} == {"0": 2, "1": 1, "4": 3}
    assert m.turn["4"].mean_abs == pytest.approx(1.6 / 3)
    # the interstitial token (|Δ| 9, mask 0) is in no bucket; every axis counts the same tokens
    assert all(sum(b.tokens for b in m.axis(a).values()) == 6 for a in ("harness", "lag", "turn"))


def test_non_finite_deltas_are_left_out() -> None:
    d = DELTA.copy()
    d[0, 0] = np.nan
    m = split(d, MASK, harness=["codex", "shell"], versions=VERSIONS, turns=TURNS, trainer_version=3)
    assert m.harness["codex"].tokens == 2 and m.lag["0"] == Bucket(tokens=1, mean_abs=pytest.approx(0.3), max_abs=0.3)


def test_merge_weights_the_means_by_tokens() -> None:
    a = split(DELTA, MASK, harness=["codex", "shell"], versions=VERSIONS, turns=TURNS, trainer_version=3)
    b = split(DELTA, MASK, harness=["codex", "codex"], versions=VERSIONS, turns=TURNS, trainer_version=4)
    m = merge([a, None, b])
    assert m.harness["codex"].tokens == 9 and m.harness["shell"].tokens == 3
    assert m.harness["codex"].mean_abs == pytest.approx((0.6 + 0.6 + 1.6) / 9)
    assert m.lag["1"].tokens == 1 + 2  # step a: v2 at 3; step b: v3 at 4 (2 tokens)
    assert ordered(["unknown", "10", "2", "16+", "0"]) == ["0", "2", "10", "16+", "unknown"]
    assert summary_line(a, "lag", limit=2) == "lag 0: 2.0e-01 (2 tok), 1: 2.0e-01 (1 tok), +2 more"


def test_turns_are_the_runs_of_sampled_tokens() -> None:
    mask = np.array([1, 1, 0, 0, 1, 0, 1, 1])
    assert token_turns(mask, [3, 5, 9]).tolist() == [3, 3, -1, -1, 5, -1, 9, 9]
    assert token_turns(mask, [7]).tolist() == [0, 0, -1, -1, 1, -1, 2, 2]  # counts disagree: the run's index
    assert token_turns(np.zeros(3), [0]).tolist() == [-1, -1, -1]


def _sample(versions: list[int], weight_versions: list[str]) -> TrainSample:
    n = 4
    return TrainSample(group_id="g", sample_index=0, trace_index=0, tokens=np.zeros(n + 2, np.int32),
                       loss_mask=np.zeros(n + 2, np.uint8), rollout_logprobs=np.zeros(n, np.float32),
                       prompt_length=2, response_length=n, reward=0.0, status=TraceStatus.COMPLETED, masked=False,
                       policy_version=0, weight_versions=weight_versions, metadata={},
                       response_versions=np.asarray(versions, dtype=np.int32))


def test_token_versions_come_from_the_shard_column_else_the_chain() -> None:
    mask = np.array([1, 0, 1, 1])
    assert sampled_versions(_sample([0, -1, 2, 2], ["default", "2"]), mask).tolist() == [0, -1, 2, 2]
    assert sampled_versions(_sample([], ["7"]), mask).tolist() == [7, -1, 7, 7]  # one version: every token
    assert sampled_versions(_sample([], ["1", "2"]), mask).tolist() == [-1] * 4  # several: not known per token
    assert sampled_versions(_sample([], ["default"]), mask).tolist() == [0, -1, 0, 0]


def test_the_step_line_shows_lags_and_harnesses_only_when_a_step_has_several() -> None:
    from polar_hpc.train.grpo.batch import GroupCounts
    from polar_hpc.train.grpo.metrics import StepMetrics, step_line

    one = split(DELTA, MASK, harness=["codex", "codex"], versions=np.full_like(VERSIONS, 3), turns=TURNS,
                trainer_version=3)
    many = split(DELTA, MASK, harness=["codex", "shell"], versions=VERSIONS, turns=TURNS, trainer_version=3,
                 masked=MASKED)

    def line(m: Mismatch, masked: float) -> str:
        return step_line(StepMetrics(step=2, reward=0.5, loss=0.1, logp_diff_mean=0.1, logp_diff_max=0.7,
                                     clipped_share=0.0, masked_share=masked, rollout_versions=["2", "3"],
                                     pushed_version=3, wait_s=0.0, step_s=1.0, counts=GroupCounts(), time=0.0,
                                     mismatch=m))

    assert "[lag" not in line(one, 0.0) and "masked" not in line(one, 0.0)
    text = line(many, 1 / 6)
    assert "clipped 0%, masked 17%)" in text
    assert "[lag 0: 2.0e-01 (2 tok), 1: 2.0e-01 (1 tok), 2: 6.0e-01 (2 tok, 1 masked), unknown: 4.0e-01 (1 tok); " \
           "harness codex: 2.0e-01 (3 tok), shell: 5.3e-01 (3 tok, 1 masked)]" in text
