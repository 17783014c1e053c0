from stock_amount import adjust_stock, pick_amount


def test_adjust_stock():
    assert adjust_stock(10, 32) == 72
    assert adjust_stock(50, 13) == 213


def test_pick_amount():
    assert pick_amount(7, 23, 32) == 23
    assert pick_amount(5, 14, 46) == 14
