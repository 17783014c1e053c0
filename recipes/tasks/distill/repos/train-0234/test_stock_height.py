from stock_height import adjust_stock, trim_height


def test_adjust_stock():
    assert adjust_stock([38, 53, 25, 58, 20]) == 58
    assert adjust_stock([23, 55, 56]) == 56


def test_trim_height():
    assert trim_height(32, 47) == 50
    assert trim_height(44, 13) == 31
