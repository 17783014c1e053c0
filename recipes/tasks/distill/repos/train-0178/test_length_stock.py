from length_stock import shift_stock, trim_length


def test_trim_length():
    assert trim_length(4, 56) == 4
    assert trim_length(29, 11) == 149


def test_shift_stock():
    assert shift_stock(22, 52) == 96
    assert shift_stock(11, 8) == 30
