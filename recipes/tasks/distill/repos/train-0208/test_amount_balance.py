from amount_balance import bound_amount, get_balance


def test_bound_amount():
    assert bound_amount(11, 28) == 401
    assert bound_amount(47, 13) == 1676


def test_get_balance():
    assert get_balance(16, 10) == 90
    assert get_balance(38, 13) == 203
