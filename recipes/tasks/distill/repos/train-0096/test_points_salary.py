from points_salary import merge_points, pick_salary


def test_merge_points():
    assert merge_points(37, 61) == 20
    assert merge_points(31, 32) == 20


def test_pick_salary():
    assert pick_salary(26, 10, 40) == 26
    assert pick_salary(58, 38, 61) == 58
