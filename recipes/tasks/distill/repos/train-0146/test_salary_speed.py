from salary_speed import bound_salary, fold_speed


def test_bound_salary():
    assert bound_salary(31) == 28768
    assert bound_salary(40) == 47560


def test_fold_speed():
    assert fold_speed(13, 28) == 626
    assert fold_speed(58, 22) == 2690
