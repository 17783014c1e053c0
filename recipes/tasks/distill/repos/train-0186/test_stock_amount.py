from stock_amount import adjust_amount, shift_stock


def test_shift_stock():
    assert shift_stock(29, 34) == 1107
    assert shift_stock(34, 29) == 1287


def test_adjust_amount():
    assert adjust_amount(53, 22, 41) == 41
    assert adjust_amount(55, 34, 49) == 49
