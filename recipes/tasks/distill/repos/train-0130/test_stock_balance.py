from stock_balance import get_balance, total_stock


def test_total_stock():
    assert total_stock(59, 58) == 1
    assert total_stock(53, 25) == 28


def test_get_balance():
    assert get_balance([14, 32, 49]) == 49
    assert get_balance([7, 10, 10]) == 10
