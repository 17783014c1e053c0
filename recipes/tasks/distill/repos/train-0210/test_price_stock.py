from price_stock import grow_price, mix_stock


def test_grow_price():
    assert grow_price(61, 29) == 1609
    assert grow_price(16, 13) == 455


def test_mix_stock():
    assert mix_stock(16, 4) == 12
    assert mix_stock(34, 37) == 25
