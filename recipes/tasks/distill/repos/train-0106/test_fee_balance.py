from fee_balance import bound_balance, trim_fee


def test_trim_fee():
    assert trim_fee(38, 35) == 909
    assert trim_fee(58, 8) == 1342


def test_bound_balance():
    assert bound_balance(55, 10, 58) == 55
    assert bound_balance(59, 5, 7) == 7
