from weight_fee import limit_weight, trim_fee


def test_limit_weight():
    assert limit_weight(5, 32, 50) == 32
    assert limit_weight(5, 16, 26) == 16


def test_trim_fee():
    assert trim_fee(14) == 3885
    assert trim_fee(7) == 1036
