from width_length import adjust_length, total_width


def test_total_width():
    assert total_width([31, 26, 14], 31) == 1
    assert total_width([22, 59, 13, 23, 56], 23) == 3


def test_adjust_length():
    assert adjust_length(44, 37) == 2325
    assert adjust_length(38, 52) == 2028
