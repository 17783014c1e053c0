from height_fee import bound_height, merge_fee


def test_bound_height():
    assert bound_height(55, 10) == 45
    assert bound_height(61, 55) == 6


def test_merge_fee():
    assert merge_fee(35, 17, 34) == 34
    assert merge_fee(13, 8, 49) == 13
