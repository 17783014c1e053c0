from price_speed import limit_price, sum_speed


def test_limit_price():
    assert limit_price(5, 5) == 0
    assert limit_price(22, 43) == 37


def test_sum_speed():
    assert sum_speed([35, 14, 29, 11]) == 35
    assert sum_speed([41, 5, 32]) == 41
