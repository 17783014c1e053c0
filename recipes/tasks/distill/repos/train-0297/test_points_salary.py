from points_salary import make_points, score_salary


def test_make_points():
    assert make_points(26, 26) == 0
    assert make_points(52, 41) == 11


def test_score_salary():
    assert score_salary(23, 28) == 46
    assert score_salary(56, 43) == 13
