from height_fee import adjust_height, clip_fee


def test_adjust_height():
    assert adjust_height(11, 10) == 1
    assert adjust_height(19, 10) == 9


def test_clip_fee():
    assert clip_fee(29, 13, 20) == 20
    assert clip_fee(50, 47, 61) == 50
