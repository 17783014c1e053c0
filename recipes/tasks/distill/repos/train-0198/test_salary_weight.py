from salary_weight import pick_salary, pick_weight


def test_pick_salary():
    assert pick_salary(49, 8) == 41
    assert pick_salary(22, 16) == 6


def test_pick_weight():
    assert pick_weight(37, 4, 61) == 37
    assert pick_weight(2, 46, 53) == 46
