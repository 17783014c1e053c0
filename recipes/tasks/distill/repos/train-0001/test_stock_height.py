from stock_height import count_stock, shift_height


def test_count_stock():
    assert count_stock(14) == 1680
    assert count_stock(49) == 19600


def test_shift_height():
    assert shift_height([35, 16, 53]) == 53
    assert shift_height([43, 28, 40, 10]) == 43
