"""pass@k and the Wilson interval against values computed by hand (and the published 0/30 bound)."""

from __future__ import annotations

import math

import pytest

from polar_hpc.measure.stats import mean_pass_at_k, pass_at_k, wilson

TOL = 1e-4


@pytest.mark.parametrize("x,n,low,high", [
    (0, 30, 0.0, 0.11351),     # z^2/(n+z^2) = 3.8415/33.8415: the "rule of three"-like bound for 0 of 30
    (5, 10, 0.23659, 0.76341),  # centre 0.5, half 1.96/1.38415 * sqrt(0.025 + 3.8415/400)
    (30, 30, 0.88649, 1.0),
    (1, 60, 0.00295, 0.08855),  # centre (1/60 + 0.03201)/1.06403 = 0.04575, half 1.8420 * 0.023237 = 0.04280
])
def test_wilson_matches_hand_computed_bounds(x: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson(x, n)
    assert math.isclose(lo, low, abs_tol=TOL) and math.isclose(hi, high, abs_tol=TOL), (lo, hi)


def test_wilson_edges() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="0 <= successes <= n"):
        wilson(3, 2)


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3, abs=1e-12)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10, abs=1e-12)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(4, 1, 3) == pytest.approx(1 - 1 / 4, abs=1e-12)  # 1 - C(3,3)/C(4,3)
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 4, 2) == 1.0  # fewer failures than k: some draw of k always holds a pass
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_over_tasks_leaves_out_tasks_with_fewer_than_k_samples() -> None:
    assert mean_pass_at_k([(2, 1), (2, 0), (1, 1)], 2) == pytest.approx(0.5, abs=1e-12)
    assert mean_pass_at_k([(2, 1), (2, 0), (1, 1)], 1) == pytest.approx((0.5 + 0 + 1) / 3, abs=1e-12)
    assert mean_pass_at_k([(1, 1)], 2) is None
