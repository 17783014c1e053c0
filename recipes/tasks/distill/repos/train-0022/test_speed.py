from speed import make_speed, score_speed


def test_make_speed():
    assert make_speed(53) == 44361
    assert make_speed(14) == 3255


def test_score_speed():
    assert score_speed([11, 31, 59, 61]) == 61
    assert score_speed([25, 56, 34, 29, 40]) == 56
