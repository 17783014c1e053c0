"""Truncated importance sampling against recorded rollout logprobs, checked against a hand computation."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="the train extra (torch) is not installed")

from polar_hpc.train.grpo.tis import tis_correction, tis_weights  # noqa: E402

TRAINER = torch.tensor([[-1.0, -2.0, -0.5], [-0.3, -0.3, -0.3]])
ROLLOUT = torch.tensor([[-1.1, -1.0, -9.0], [-0.3, -0.5, float("nan")]])
MASK = torch.tensor([[1, 1, 0], [1, 1, 0]])


def test_token_level_weights_are_the_ratio_capped_and_one_off_mask() -> None:
    w, st = tis_weights(TRAINER, ROLLOUT, MASK, clip=1.1, level="token")
    # row 0: exp(0.1) = 1.1052 -> capped at 1.1; exp(-1) = 0.3679; row 1: exp(0) = 1, exp(0.2) = 1.2214 -> 1.1
    want = [[1.1, math.exp(-1.0), 1.0], [1.0, 1.1, 1.0]]
    assert torch.allclose(w, torch.tensor(want), atol=1e-6)
    assert st.clipped_share == pytest.approx(2 / 4) and st.tokens == 4
    assert st.logp_diff_mean == pytest.approx((0.1 + 1.0 + 0.0 + 0.2) / 4, abs=1e-6)
    assert st.logp_diff_max == pytest.approx(1.0, abs=1e-6)
    assert st.ratio_mean == pytest.approx((math.exp(0.1) + math.exp(-1) + 1 + math.exp(0.2)) / 4, abs=1e-6)


def test_sequence_level_weights_use_the_summed_log_ratio() -> None:
    w, st = tis_weights(TRAINER, ROLLOUT, MASK, clip=1.1, level="sequence")
    s0 = math.exp(0.1 - 1.0)  # 0.4066 kept; row 1: exp(0.2) = 1.2214 capped
    assert torch.allclose(w, torch.tensor([[s0, s0, 1.0], [1.1, 1.1, 1.0]]), atol=1e-6)
    assert st.clipped_share == pytest.approx(0.5)


def test_equal_logprobs_give_weight_one() -> None:
    w, st = tis_weights(TRAINER, TRAINER.clone(), MASK, clip=2.0)
    assert torch.equal(w, torch.ones_like(w)) and st.logp_diff_max == 0.0 and st.clipped_share == 0.0


def test_icepop_masks_ratios_outside_the_band_and_clips_inside() -> None:
    # ratios: row 0 exp(0.1) = 1.105, exp(-1) = 0.368; row 1 exp(0) = 1, exp(0.2) = 1.221. Band c = 1.2:
    # [0.833, 1.2] masks 0.368 and 1.221; clip 1.1 truncates 1.105 (inside the band).
    c = tis_correction(TRAINER, ROLLOUT, MASK, clip=1.1, level="token", band=1.2)
    assert torch.allclose(c.weights, torch.tensor([[1.1, 0.0, 1.0], [1.0, 0.0, 1.0]]), atol=1e-6)
    assert c.masked.tolist() == [[False, True, False], [False, True, False]]
    assert c.clipped.tolist() == [[True, False, False], [False, False, False]]
    assert c.stats.masked_share == pytest.approx(2 / 4) and c.stats.clipped_share == pytest.approx(1 / 4)
    off = tis_correction(TRAINER, ROLLOUT, MASK, clip=1.1, level="token")  # band 0: no masking
    assert not off.masked.any() and off.stats.masked_share == 0.0


def test_sequence_level_masking_zeroes_a_whole_row() -> None:
    # sequence ratios: row 0 exp(-0.9) = 0.407 (outside [0.5, 2]: masked), row 1 exp(0.2) = 1.221 (kept, below clip 2)
    c = tis_correction(TRAINER, ROLLOUT, MASK, clip=2.0, level="sequence", band=2.0)
    assert torch.allclose(c.weights, torch.tensor([[0.0, 0.0, 1.0], [math.exp(0.2), math.exp(0.2), 1.0]]), atol=1e-6)
    assert c.masked.tolist() == [[True, True, False], [False, False, False]]
    assert c.stats.masked_share == pytest.approx(0.5) and c.stats.clipped_share == 0.0


def test_a_band_of_one_or_less_is_refused_in_one_line() -> None:
    from polar_hpc.train.grpo.mismatch import check_correction

    assert check_correction(2.0, 0.0) is None and check_correction(2.0, 5.0) is None
    why = check_correction(2.0, 0.8)
    assert why is not None and "trainer.tis_mask = 0.8" in why and "\n" not in why
