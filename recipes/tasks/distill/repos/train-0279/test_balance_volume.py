from balance_volume import count_volume, make_balance


def test_make_balance():
    assert make_balance(7, 17) == 341
    assert make_balance(47, 34) == 2084


def test_count_volume():
    assert count_volume(34, 52) == 44
    assert count_volume(56, 47) == 9
