from height_speed import adjust_height, clip_speed


def test_adjust_height():
    assert adjust_height(56, 56) == 0
    assert adjust_height(5, 35) == 31


def test_clip_speed():
    assert clip_speed(53, 20) == 1504
    assert clip_speed(43, 37) == 1241
