from ridge_crate import cap_crate, rank_ridge


def test_rank_ridge():
    assert rank_ridge([27, 15, 15, 6], 27) == 1
    assert rank_ridge([18, 3, 27], 18) == 2


def test_cap_crate():
    assert cap_crate(12, 33) == 42
    assert cap_crate(54, 6) == 48
