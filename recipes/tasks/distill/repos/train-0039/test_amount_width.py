from amount_width import clip_width, get_amount


def test_get_amount():
    assert get_amount(25, 41) == 691
    assert get_amount(44, 4) == 1148


def test_clip_width():
    assert clip_width(32, 2, 59) == 32
    assert clip_width(8, 31, 38) == 31
