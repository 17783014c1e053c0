from weight_fee import rate_fee, sum_weight


def test_sum_weight():
    assert sum_weight([35, 40, 29]) == 40
    assert sum_weight([52, 38, 50, 35, 17]) == 52


def test_rate_fee():
    assert rate_fee(38, 7) == 31
    assert rate_fee(25, 53) == 29
