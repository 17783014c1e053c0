from salary_level import bound_level, bound_salary


def test_bound_salary():
    assert bound_salary(52) == 9646
    assert bound_salary(13) == 637


def test_bound_level():
    assert bound_level(16, 19) == 23
    assert bound_level(25, 26) == 23
