from stock_salary import adjust_salary, limit_stock


def test_limit_stock():
    assert limit_stock([2, 29, 14], 2) == 3
    assert limit_stock([11, 13, 7, 44, 53], 44) == 2


def test_adjust_salary():
    assert adjust_salary(35, 20, 49) == 35
    assert adjust_salary(50, 41, 52) == 50
