from fee_rating import merge_fee, shift_rating


def test_merge_fee():
    assert merge_fee([13, 61, 41, 56, 61], 41) == 4
    assert merge_fee([37, 22, 13, 55, 7], 13) == 4


def test_shift_rating():
    assert shift_rating(11, 22, 49) == 22
    assert shift_rating(14, 41, 50) == 41
