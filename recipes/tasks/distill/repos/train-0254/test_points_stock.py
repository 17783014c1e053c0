from points_stock import merge_stock, rate_points


def test_rate_points():
    assert rate_points(35, 32) == 1829
    assert rate_points(56, 37) == 2916


def test_merge_stock():
    assert merge_stock(26, 8, 25) == 25
    assert merge_stock(61, 8, 26) == 26
