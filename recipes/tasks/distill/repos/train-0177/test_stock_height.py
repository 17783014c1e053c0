from stock_height import shift_stock, trim_height


def test_shift_stock():
    assert shift_stock(59) == 77880
    assert shift_stock(53) == 62964


def test_trim_height():
    assert trim_height(55, 22, 47) == 47
    assert trim_height(55, 11, 37) == 37
