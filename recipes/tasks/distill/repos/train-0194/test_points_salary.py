from points_salary import count_salary, trim_points


def test_trim_points():
    assert trim_points([40, 17, 13]) == 40
    assert trim_points([31, 11, 35]) == 35


def test_count_salary():
    assert count_salary(52, 58) == 1046
    assert count_salary(14, 29) == 295
