from length_speed import adjust_length, clip_speed


def test_adjust_length():
    assert adjust_length(55) == 7700
    assert adjust_length(53) == 7155


def test_clip_speed():
    assert clip_speed(49, 29, 52) == 49
    assert clip_speed(26, 10, 29) == 26
