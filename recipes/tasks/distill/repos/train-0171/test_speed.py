from speed import adjust_speed, count_speed


def test_adjust_speed():
    assert adjust_speed(2, 4) == 49
    assert adjust_speed(16, 41) == 49


def test_count_speed():
    assert count_speed(37, 61) == 5
    assert count_speed(40, 17) == 23
