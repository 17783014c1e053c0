from points_count import bound_count, count_points


def test_count_points():
    assert count_points(7, 13) == 314
    assert count_points(59, 20) == 2557


def test_bound_count():
    assert bound_count([58, 50, 20, 46, 41]) == 58
    assert bound_count([23, 37, 8]) == 37
