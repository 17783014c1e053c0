from crate_ridge import nudge_crate, sift_ridge


def test_nudge_crate():
    assert nudge_crate(15) == 1800
    assert nudge_crate(39) == 11700


def test_sift_ridge():
    assert sift_ridge([57, 45, 9, 30, 54]) == 57
    assert sift_ridge([6, 21, 3, 27, 15]) == 27
