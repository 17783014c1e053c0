from speed_salary import limit_salary, score_speed


def test_score_speed():
    assert score_speed(17, 7) == 575
    assert score_speed(58, 8) == 1968


def test_limit_salary():
    assert limit_salary(29) == 5655
    assert limit_salary(31) == 6448
