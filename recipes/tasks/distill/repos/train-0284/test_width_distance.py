from width_distance import clip_distance, trim_width


def test_trim_width():
    assert trim_width(41, 13) == 341
    assert trim_width(35, 7) == 287


def test_clip_distance():
    assert clip_distance(50) == 59925
    assert clip_distance(31) == 23312
