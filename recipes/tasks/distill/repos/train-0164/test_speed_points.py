from speed_points import make_speed, total_points


def test_make_speed():
    assert make_speed(44, 34) == 1926
    assert make_speed(55, 53) == 2418


def test_total_points():
    assert total_points(2, 25) == 59
    assert total_points(7, 10) == 129
