from price import bound_price, mix_price


def test_mix_price():
    assert mix_price(37, 32) == 5
    assert mix_price(5, 34) == 23


def test_bound_price():
    assert bound_price(59, 25) == 34
    assert bound_price(10, 47) == 22
