from width_stock import make_stock, pick_width


def test_pick_width():
    assert pick_width(13, 8, 29) == 13
    assert pick_width(14, 11, 41) == 14


def test_make_stock():
    assert make_stock(50) == 58650
    assert make_stock(28) == 18676
