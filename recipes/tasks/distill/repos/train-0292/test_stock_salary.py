from stock_salary import grow_stock, mix_salary


def test_grow_stock():
    assert grow_stock(43) == 50138
    assert grow_stock(38) == 39273


def test_mix_salary():
    assert mix_salary([58, 28, 49, 10]) == 58
    assert mix_salary([28, 20, 44, 35]) == 44
