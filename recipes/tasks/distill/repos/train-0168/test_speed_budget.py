from speed_budget import clip_speed, get_budget


def test_clip_speed():
    assert clip_speed(53, 50) == 3
    assert clip_speed(14, 11) == 3


def test_get_budget():
    assert get_budget(52, 55) == 41
    assert get_budget(8, 38) == 41
