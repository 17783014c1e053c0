from width_points import find_points, pick_width


def test_pick_width():
    assert pick_width(61, 40) == 21
    assert pick_width(58, 17) == 41


def test_find_points():
    assert find_points(17) == 2448
    assert find_points(47) == 18048
