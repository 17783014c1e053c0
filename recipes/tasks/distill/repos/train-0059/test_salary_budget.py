from salary_budget import shift_salary, total_budget


def test_shift_salary():
    assert shift_salary(52, 28) == 2525
    assert shift_salary(40, 5) == 1960


def test_total_budget():
    assert total_budget(40, 14) == 26
    assert total_budget(14, 7) == 7
