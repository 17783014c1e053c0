from balance_price import find_balance, scale_price


def test_find_balance():
    assert find_balance(53, 20) == 2426
    assert find_balance(44, 17) == 2015


def test_scale_price():
    assert scale_price(50, 8, 59) == 50
    assert scale_price(49, 2, 50) == 49
