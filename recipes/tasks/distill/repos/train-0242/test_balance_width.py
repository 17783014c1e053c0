from balance_width import count_width, trim_balance


def test_trim_balance():
    assert trim_balance(31, 31) == 0
    assert trim_balance(41, 28) == 13


def test_count_width():
    assert count_width(20) == 3360
    assert count_width(7) == 448
