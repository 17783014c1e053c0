from volume_balance import bound_balance, limit_volume


def test_limit_volume():
    assert limit_volume(29, 52) == 197
    assert limit_volume(56, 53) == 333


def test_bound_balance():
    assert bound_balance(49, 7, 56) == 49
    assert bound_balance(7, 4, 11) == 7
