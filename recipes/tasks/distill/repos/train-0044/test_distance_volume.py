from distance_volume import find_volume, rate_distance


def test_rate_distance():
    assert rate_distance(37, 40) == 2001
    assert rate_distance(46, 40) == 2478


def test_find_volume():
    assert find_volume([2, 61, 31, 8]) == 61
    assert find_volume([52, 40, 8, 5, 8]) == 52
