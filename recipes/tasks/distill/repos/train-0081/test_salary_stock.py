from salary_stock import bound_stock, mix_salary


def test_mix_salary():
    assert mix_salary(49) == 42875
    assert mix_salary(50) == 44625


def test_bound_stock():
    assert bound_stock(31, 14, 40) == 31
    assert bound_stock(46, 8, 17) == 17
