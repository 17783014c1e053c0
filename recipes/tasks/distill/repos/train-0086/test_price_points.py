from price_points import adjust_points, get_price


def test_get_price():
    assert get_price(2, 53) == 61
    assert get_price(13, 43) == 61


def test_adjust_points():
    assert adjust_points(46, 13, 61) == 46
    assert adjust_points(31, 34, 52) == 34
