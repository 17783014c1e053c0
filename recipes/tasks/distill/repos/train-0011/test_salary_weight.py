from salary_weight import count_salary, scale_weight


def test_count_salary():
    assert count_salary(38, 13) == 773
    assert count_salary(41, 46) == 866


def test_scale_weight():
    assert scale_weight(49) == 49000
    assert scale_weight(28) == 16240
