from width_stock import get_stock, total_width


def test_total_width():
    assert total_width([34, 47, 11, 35]) == 47
    assert total_width([31, 34, 4, 14]) == 34


def test_get_stock():
    assert get_stock(5, 37) == 242
    assert get_stock(56, 58) == 2354
