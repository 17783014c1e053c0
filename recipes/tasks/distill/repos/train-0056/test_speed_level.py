from speed_level import bound_speed, rate_level


def test_bound_speed():
    assert bound_speed(28, 13) == 1497
    assert bound_speed(55, 43) == 2958


def test_rate_level():
    assert rate_level([40, 11, 46, 61]) == 61
    assert rate_level([44, 28, 46, 25]) == 46
