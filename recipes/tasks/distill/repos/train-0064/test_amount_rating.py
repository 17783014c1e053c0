from amount_rating import grow_rating, shift_amount


def test_shift_amount():
    assert shift_amount(55, 17) == 2394
    assert shift_amount(26, 40) == 1124


def test_grow_rating():
    assert grow_rating(52) == 64766
    assert grow_rating(35) == 29610
