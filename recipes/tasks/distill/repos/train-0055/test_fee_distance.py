from fee_distance import adjust_fee, make_distance


def test_adjust_fee():
    assert adjust_fee([49, 34, 49, 55], 34) == 4
    assert adjust_fee([32, 34, 41, 29], 34) == 2


def test_make_distance():
    assert make_distance(47, 44) == 3
    assert make_distance(19, 56) == 58
