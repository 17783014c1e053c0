from price_margin import limit_margin, scale_price


def test_scale_price():
    assert scale_price(14, 32) == 307
    assert scale_price(41, 40) == 839


def test_limit_margin():
    assert limit_margin(43, 10) == 2633
    assert limit_margin(53, 61) == 3294
