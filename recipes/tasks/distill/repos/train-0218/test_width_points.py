from width_points import clip_width, count_points


def test_clip_width():
    assert clip_width(25, 44) == 173
    assert clip_width(16, 40) == 105


def test_count_points():
    assert count_points(23, 41) == 409
    assert count_points(40, 22) == 662
