from margin_price import bound_price, total_margin


def test_total_margin():
    assert total_margin(49, 5) == 103
    assert total_margin(35, 20) == 90


def test_bound_price():
    assert bound_price(19, 55) == 29
    assert bound_price(28, 56) == 29
