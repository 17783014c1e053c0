from salary_price import bound_price, pick_salary


def test_pick_salary():
    assert pick_salary(29, 20, 40) == 29
    assert pick_salary(22, 8, 25) == 22


def test_bound_price():
    assert bound_price([13, 29, 53, 56, 34]) == 56
    assert bound_price([41, 22, 50]) == 50
