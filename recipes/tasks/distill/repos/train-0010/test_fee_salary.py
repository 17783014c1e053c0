from fee_salary import limit_fee, make_salary


def test_limit_fee():
    assert limit_fee(47) == 31584
    assert limit_fee(46) == 30268


def test_make_salary():
    assert make_salary(37, 11) == 26
    assert make_salary(8, 2) == 6
