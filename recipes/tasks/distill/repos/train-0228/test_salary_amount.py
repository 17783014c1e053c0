from salary_amount import score_amount, sum_salary


def test_sum_salary():
    assert sum_salary(49, 11) == 38
    assert sum_salary(29, 55) == 7


def test_score_amount():
    assert score_amount(5, 11) == 216
    assert score_amount(59, 38) == 2457
