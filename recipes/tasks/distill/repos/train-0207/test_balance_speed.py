from balance_speed import limit_balance, sum_speed


def test_limit_balance():
    assert limit_balance(28, 28) == 0
    assert limit_balance(40, 52) == 34


def test_sum_speed():
    assert sum_speed(5, 29) == 34
    assert sum_speed(17, 35) == 34
