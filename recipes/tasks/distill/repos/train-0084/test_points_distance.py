from points_distance import make_distance, shift_points


def test_shift_points():
    assert shift_points(47) == 65424
    assert shift_points(14) == 6090


def test_make_distance():
    assert make_distance(17, 25, 52) == 25
    assert make_distance(55, 8, 19) == 19
