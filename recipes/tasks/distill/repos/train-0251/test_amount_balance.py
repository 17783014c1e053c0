from amount_balance import get_amount, limit_balance


def test_get_amount():
    assert get_amount(44) == 28710
    assert get_amount(58) == 49619


def test_limit_balance():
    assert limit_balance(26, 16, 22) == 22
    assert limit_balance(14, 31, 46) == 31
