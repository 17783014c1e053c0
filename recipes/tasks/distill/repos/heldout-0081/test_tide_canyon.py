from tide_canyon import boost_tide, sift_canyon


def test_boost_tide():
    assert boost_tide(42) == 10836
    assert boost_tide(15) == 1440


def test_sift_canyon():
    assert sift_canyon(24, 54, 60) == 54
    assert sift_canyon(21, 15, 54) == 21
