from height_width import fold_height, shift_width


def test_fold_height():
    assert fold_height(11) == 2112
    assert fold_height(29) == 13920


def test_shift_width():
    assert shift_width(56, 35) == 21
    assert shift_width(35, 58) == 46
