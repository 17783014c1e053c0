from weight_points import adjust_points, make_weight


def test_make_weight():
    assert make_weight(59, 59) == 0
    assert make_weight(56, 38) == 18


def test_adjust_points():
    assert adjust_points(41, 23, 44) == 41
    assert adjust_points(35, 10, 56) == 35
