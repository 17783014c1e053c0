from width_points import fold_points, shift_width


def test_shift_width():
    assert shift_width(22, 5) == 357
    assert shift_width(28, 44) == 492


def test_fold_points():
    assert fold_points(61, 7) == 1044
    assert fold_points(41, 50) == 747
