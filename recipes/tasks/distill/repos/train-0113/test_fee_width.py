from fee_width import count_fee, shift_width


def test_count_fee():
    assert count_fee(17, 2) == 391
    assert count_fee(35, 35) == 718


def test_shift_width():
    assert shift_width([13, 52, 40]) == 52
    assert shift_width([35, 43, 35, 13, 22]) == 43
