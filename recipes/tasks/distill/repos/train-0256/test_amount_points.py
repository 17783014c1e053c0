from amount_points import bound_points, make_amount


def test_make_amount():
    assert make_amount(7) == 1148
    assert make_amount(16) == 5576


def test_bound_points():
    assert bound_points(8, 16, 34) == 16
    assert bound_points(4, 16, 40) == 16
