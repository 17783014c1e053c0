from balance_volume import count_balance, make_volume


def test_count_balance():
    assert count_balance(11, 40) == 194
    assert count_balance(52, 43) == 771


def test_make_volume():
    assert make_volume(19, 59) == 97
    assert make_volume(10, 46) == 66
