from height_width import make_height, sum_width


def test_make_height():
    assert make_height(17, 4) == 276
    assert make_height(4, 35) == 99


def test_sum_width():
    assert sum_width(40, 46) == 1766
    assert sum_width(10, 32) == 462
