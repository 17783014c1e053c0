from crate_orbit import boost_crate, sift_orbit


def test_boost_crate():
    assert boost_crate(30, 6) == 1170
    assert boost_crate(3, 3) == 120


def test_sift_orbit():
    assert sift_orbit([48, 60, 9, 51]) == 60
    assert sift_orbit([21, 21, 45, 36]) == 45
