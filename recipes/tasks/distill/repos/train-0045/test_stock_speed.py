from stock_speed import fold_stock, get_speed


def test_fold_stock():
    assert fold_stock(22, 19, 37) == 22
    assert fold_stock(49, 47, 52) == 49


def test_get_speed():
    assert get_speed(43, 22) == 21
    assert get_speed(13, 28) == 26
