from points_weight import adjust_weight, get_points


def test_get_points():
    assert get_points(22, 61) == 215
    assert get_points(2, 11) == 25


def test_adjust_weight():
    assert adjust_weight(4, 7, 17) == 7
    assert adjust_weight(38, 40, 41) == 40
