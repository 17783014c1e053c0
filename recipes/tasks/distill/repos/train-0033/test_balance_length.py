from balance_length import limit_length, make_balance


def test_make_balance():
    assert make_balance(23, 52) == 629
    assert make_balance(19, 58) == 507


def test_limit_length():
    assert limit_length(55, 14) == 41
    assert limit_length(11, 8) == 3
