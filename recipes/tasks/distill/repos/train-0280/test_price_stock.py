from price_stock import make_stock, pick_price


def test_pick_price():
    assert pick_price(2, 59) == 109
    assert pick_price(26, 40) == 690


def test_make_stock():
    assert make_stock(35) == 16380
    assert make_stock(16) == 3536
