from amount_fee import grow_amount, trim_fee


def test_grow_amount():
    assert grow_amount(61, 59) == 2
    assert grow_amount(50, 26) == 24


def test_trim_fee():
    assert trim_fee(5, 25) == 2
    assert trim_fee(23, 41) == 2
