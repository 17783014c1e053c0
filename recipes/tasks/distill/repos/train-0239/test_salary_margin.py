from salary_margin import mix_salary, sum_margin


def test_mix_salary():
    assert mix_salary(52, 61) == 1643
    assert mix_salary(17, 28) == 556


def test_sum_margin():
    assert sum_margin(44, 46, 53) == 46
    assert sum_margin(56, 19, 34) == 34
