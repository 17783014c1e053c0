from count_points import grow_points, score_count


def test_score_count():
    assert score_count(43, 43) == 0
    assert score_count(23, 46) == 55


def test_grow_points():
    assert grow_points(41, 29, 40) == 40
    assert grow_points(35, 52, 55) == 52
