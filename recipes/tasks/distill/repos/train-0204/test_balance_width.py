from balance_width import find_balance, limit_width


def test_find_balance():
    assert find_balance(56) == 97356
    assert find_balance(40) == 50020


def test_limit_width():
    assert limit_width(23, 55) == 1274
    assert limit_width(14, 2) == 744
