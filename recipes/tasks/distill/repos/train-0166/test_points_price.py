from points_price import pick_points, shift_price


def test_pick_points():
    assert pick_points(26, 46) == 696
    assert pick_points(19, 31) == 506


def test_shift_price():
    assert shift_price(58, 37) == 21
    assert shift_price(7, 29) == 34
