from speed_points import pick_speed, sum_points


def test_pick_speed():
    assert pick_speed(13, 4) == 9
    assert pick_speed(55, 40) == 15


def test_sum_points():
    assert sum_points([29, 11, 40, 4]) == 40
    assert sum_points([20, 50, 53, 7, 22]) == 53
