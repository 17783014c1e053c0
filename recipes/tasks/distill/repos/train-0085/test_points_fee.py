from points_fee import clip_points, shift_fee


def test_clip_points():
    assert clip_points(52, 14) == 3199
    assert clip_points(31, 4) == 1928


def test_shift_fee():
    assert shift_fee(11, 2, 28) == 11
    assert shift_fee(5, 40, 55) == 40
