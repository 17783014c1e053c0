from amount_rating import clip_rating, trim_amount


def test_trim_amount():
    assert trim_amount(44, 49) == 61
    assert trim_amount(43, 7) == 36


def test_clip_rating():
    assert clip_rating(59, 32, 38) == 38
    assert clip_rating(4, 19, 29) == 19
