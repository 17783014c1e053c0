from ridge_orbit import rank_ridge, sift_orbit


def test_rank_ridge():
    assert rank_ridge(60, 30) == 2370
    assert rank_ridge(15, 3) == 588


def test_sift_orbit():
    assert sift_orbit(39, 27) == 1431
    assert sift_orbit(60, 51) == 2211
