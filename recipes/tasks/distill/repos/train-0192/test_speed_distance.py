from speed_distance import mix_distance, scale_speed


def test_scale_speed():
    assert scale_speed(20) == 420
    assert scale_speed(38) == 1482


def test_mix_distance():
    assert mix_distance(19, 20, 23) == 20
    assert mix_distance(47, 8, 11) == 11
