from ridge_pixel import rank_ridge, tune_pixel


def test_rank_ridge():
    assert rank_ridge(18, 12) == 294
    assert rank_ridge(12, 54) == 162


def test_tune_pixel():
    assert tune_pixel(42, 39) == 3
    assert tune_pixel(60, 54) == 6
