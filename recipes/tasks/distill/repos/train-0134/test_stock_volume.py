from stock_volume import make_stock, make_volume


def test_make_stock():
    assert make_stock([31, 35, 31, 59, 14]) == 59
    assert make_stock([34, 10, 32, 14, 4]) == 34


def test_make_volume():
    assert make_volume(10) == 3190
    assert make_volume(56) == 92568
