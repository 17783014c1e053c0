"""The agreement figures (polar_hpc.train.agreement) as a trainer calls them, and how a chain's jump is located;
no model here (tests/integration/train/test_logprob_agreement.py scores real shards)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from polar_hpc.store.reader import TraceView
from polar_hpc.train.agreement import ABOVE_NAT, AgreementStats, agreement_stats, combine, stats_of
from polar_hpc.train.agreement_shards import chain_agreement
from polar_hpc.wire.traces import TraceStatus


def test_kl_estimators_estimate_the_kl_of_two_distributions() -> None:
    """Tokens sampled from a rollout distribution q; the trainer's p differs: k1 and k3 both estimate KL(q || p),
    computed exactly over the vocabulary, within four standard errors of their own samples."""
    rng = np.random.default_rng(0)
    vocab, n = 50, 40_000
    logits_q = rng.normal(size=vocab)
    logits_p = logits_q + rng.normal(scale=0.3, size=vocab)
    log_q = logits_q - np.log(np.exp(logits_q).sum())
    log_p = logits_p - np.log(np.exp(logits_p).sum())
    exact = float(np.sum(np.exp(log_q) * (log_q - log_p)))
    tokens = rng.choice(vocab, size=n, p=np.exp(log_q))
    s = agreement_stats(log_p[tokens], log_q[tokens])
    ratio = np.exp(log_p[tokens] - log_q[tokens])
    for estimate, samples in ((s.kl_k1, -np.log(ratio)), (s.kl_k3, ratio - 1 - np.log(ratio))):
        assert abs(estimate - exact) < 4 * samples.std() / np.sqrt(n), (estimate, exact)
    assert s.tokens == n and s.kl_k3 >= 0


def test_batch_shapes_and_types_give_the_same_figures() -> None:
    """A padded [B, T] batch with its mask, the same as ragged lists of the kept tokens, and as torch tensors."""
    rng = np.random.default_rng(1)
    lengths = [7, 3, 9]
    trainer = rng.normal(-2.0, 1.0, size=(3, 9))
    rollout = trainer + rng.normal(0, 0.2, size=(3, 9))
    mask = np.zeros((3, 9), dtype=np.int64)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    padded = agreement_stats(trainer, rollout, mask)
    ragged = agreement_stats([trainer[i, :n] for i, n in enumerate(lengths)],
                             [rollout[i, :n] for i, n in enumerate(lengths)])
    tensors = agreement_stats(torch.tensor(trainer), torch.tensor(rollout), torch.tensor(mask))
    kept = (rollout - trainer)[mask.astype(bool)]
    assert padded.tokens == ragged.tokens == sum(lengths)
    assert padded.max_abs == pytest.approx(np.abs(kept).max(), abs=1e-12)
    assert padded.above == int(np.count_nonzero(np.abs(kept) > ABOVE_NAT))
    for other in (ragged, tensors):
        for field in ("mean_abs", "max_abs", "share_above", "kl_k1", "kl_k3"):
            assert getattr(other, field) == pytest.approx(getattr(padded, field), abs=1e-6), field


def test_combined_parts_equal_the_whole() -> None:
    rng = np.random.default_rng(2)
    delta = rng.normal(0, 0.1, size=1000)
    delta[17] = np.nan
    parts = [stats_of(d) for d in np.split(delta, [100, 101, 640])]
    whole, merged = stats_of(delta), combine(parts)
    assert merged.tokens == whole.tokens and merged.above == whole.above and merged.nonfinite == whole.nonfinite == 1
    for field in ("mean_abs", "max_abs", "share_above", "kl_k1", "kl_k3"):
        assert getattr(merged, field) == pytest.approx(getattr(whole, field), rel=1e-9, abs=1e-15), field
    assert combine([]) == AgreementStats()


def test_mismatched_shapes_name_both() -> None:
    with pytest.raises(ValueError, match="trainer logprobs hold 3 values, rollout logprobs 2"):
        agreement_stats([0.0, 0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="the mask holds 2 values, the logprobs 3"):
        agreement_stats([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1, 1])


def _view(mask: list[int], recorded: np.ndarray) -> TraceView:
    n = len(mask)
    return TraceView(shard=Path("s.h5"), trace_index=1,
                     session={"key": "t/0", "task_id": "t", "sample_index": 0, "attempt": 0,
                              "status": TraceStatus.COMPLETED, "session_reward": 1.0, "duration_s": 0.0,
                              "harness": "shell", "model": "m", "policy_version": 0, "gateway_rank": 0},
                     columns={"reward": [1.0], "finish_reason": ["stop"], "policy": ["sample"], "trainable": [True],
                              "filter": [[]]}, row=0,
                     prompt_ids=np.arange(5, dtype=np.int32), response_ids=np.arange(n, dtype=np.int32),
                     loss_mask=np.asarray(mask, dtype=np.uint8), response_logprobs=recorded.astype(np.float32),
                     blob=None)


def test_a_jump_is_named_by_its_first_token_and_turn() -> None:
    """Three completions in one chain (runs of mask 1); from the second token of the third one on, the trainer
    disagrees: the first token over the tolerance and its turn are named, the largest one located."""
    mask = [1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1]
    recorded = np.linspace(-3.0, -0.5, len(mask))
    kept = np.flatnonzero(mask)
    trainer = recorded[kept].astype(np.float32).astype(np.float64)
    trainer[kept >= 9] -= np.array([0.2, 0.5, 0.3])
    c = chain_agreement(_view(mask, recorded), trainer, 1e-3, "run")
    assert (c.first_over, c.turn, c.worst_position) == (9, 2, 10)
    assert c.stats.tokens == len(kept) and c.stats.above == 3 and c.stats.max_abs == pytest.approx(0.5, abs=1e-6)
    assert c.stats.kl_k1 == pytest.approx(1.0 / len(kept), abs=1e-6)
    ok = chain_agreement(_view(mask, recorded), recorded[kept].astype(np.float32).astype(np.float64), 1e-3, "run")
    assert ok.first_over is None and ok.turn is None and ok.stats.max_abs == 0.0


def test_a_non_finite_logprob_is_over_any_tolerance() -> None:
    mask = [1, 1, 1]
    recorded = np.array([-1.0, np.nan, -2.0])
    c = chain_agreement(_view(mask, recorded), np.array([-1.0, -1.0, -2.0]), 1e-3, "run")
    assert (c.first_over, c.turn, c.worst_position) == (1, 0, 1)
    assert c.stats.nonfinite == 1 and c.stats.above == 1 and c.stats.tokens == 3
