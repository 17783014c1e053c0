from length_fee import bound_fee, trim_length


def test_trim_length():
    assert trim_length(19, 13) == 488
    assert trim_length(46, 20) == 1156


def test_bound_fee():
    assert bound_fee(58, 28, 50) == 50
    assert bound_fee(23, 35, 44) == 35
