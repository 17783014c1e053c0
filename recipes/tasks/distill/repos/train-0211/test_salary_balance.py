from salary_balance import bound_salary, pick_balance


def test_bound_salary():
    assert bound_salary(7, 23) == 11
    assert bound_salary(55, 26) == 29


def test_pick_balance():
    assert pick_balance(44, 5) == 1105
    assert pick_balance(2, 28) == 78
