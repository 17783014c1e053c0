from weight_width import rate_weight, sum_width


def test_rate_weight():
    assert rate_weight(56, 43) == 13
    assert rate_weight(7, 14) == 20


def test_sum_width():
    assert sum_width(44) == 3960
    assert sum_width(41) == 3444
