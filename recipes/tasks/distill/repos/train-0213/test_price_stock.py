from price_stock import rate_stock, scale_price


def test_scale_price():
    assert scale_price([14, 5, 31], 31) == 1
    assert scale_price([46, 29, 20], 46) == 1


def test_rate_stock():
    assert rate_stock(5, 8) == 198
    assert rate_stock(61, 56) == 2374
