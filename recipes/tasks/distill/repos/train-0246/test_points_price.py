from points_price import count_points, trim_price


def test_count_points():
    assert count_points(2, 14) == 94
    assert count_points(46, 8) == 1848


def test_trim_price():
    assert trim_price(17, 13) == 4
    assert trim_price(34, 8) == 26
