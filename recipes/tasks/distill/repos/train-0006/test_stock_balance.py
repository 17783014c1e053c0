from stock_balance import fold_stock, get_balance


def test_fold_stock():
    assert fold_stock(4) == 80
    assert fold_stock(58) == 13688


def test_get_balance():
    assert get_balance([5, 58, 5, 4]) == 58
    assert get_balance([46, 46, 32, 58, 28]) == 58
