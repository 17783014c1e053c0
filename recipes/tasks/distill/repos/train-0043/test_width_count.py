from width_count import make_width, shift_count


def test_make_width():
    assert make_width(10, 46) == 439
    assert make_width(55, 8) == 2412


def test_shift_count():
    assert shift_count([10, 55, 8]) == 55
    assert shift_count([40, 55, 38]) == 55
