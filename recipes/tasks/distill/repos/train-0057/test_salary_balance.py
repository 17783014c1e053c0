from salary_balance import pick_salary, scale_balance


def test_pick_salary():
    assert pick_salary(56, 56) == 0
    assert pick_salary(4, 16) == 7


def test_scale_balance():
    assert scale_balance(52, 35) == 17
    assert scale_balance(37, 32) == 5
