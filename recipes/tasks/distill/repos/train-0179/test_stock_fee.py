from stock_fee import limit_fee, rate_stock


def test_rate_stock():
    assert rate_stock([59, 46, 49, 56, 16]) == 59
    assert rate_stock([52, 19, 7]) == 52


def test_limit_fee():
    assert limit_fee(44, 23, 31) == 31
    assert limit_fee(35, 13, 61) == 35
