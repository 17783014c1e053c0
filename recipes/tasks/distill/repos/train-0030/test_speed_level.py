from speed_level import make_speed, sum_level


def test_make_speed():
    assert make_speed(52, 16) == 731
    assert make_speed(17, 19) == 238


def test_sum_level():
    assert sum_level(19) == 10070
    assert sum_level(16) == 7208
