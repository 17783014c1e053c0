from amount_balance import make_balance, trim_amount


def test_trim_amount():
    assert trim_amount([26, 56, 50, 43, 41], 50) == 2
    assert trim_amount([50, 23, 56, 19], 56) == 1


def test_make_balance():
    assert make_balance(44) == 6930
    assert make_balance(34) == 4165
