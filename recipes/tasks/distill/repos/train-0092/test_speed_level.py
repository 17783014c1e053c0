from speed_level import find_level, pick_speed


def test_pick_speed():
    assert pick_speed(58, 58) == 0
    assert pick_speed(35, 53) == 5


def test_find_level():
    assert find_level(26, 52) == 1118
    assert find_level(25, 8) == 1033
