from stock_width import fold_stock, limit_width


def test_fold_stock():
    assert fold_stock(53, 16) == 37
    assert fold_stock(19, 49) == 56


def test_limit_width():
    assert limit_width(55, 22) == 33
    assert limit_width(16, 35) == 25
