from salary_volume import rate_salary, trim_volume


def test_rate_salary():
    assert rate_salary([2, 28, 43, 59, 19]) == 59
    assert rate_salary([52, 58, 44, 2]) == 58


def test_trim_volume():
    assert trim_volume([10, 13, 10, 19]) == 19
    assert trim_volume([4, 19, 22, 7]) == 22
