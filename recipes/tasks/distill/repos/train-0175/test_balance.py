from balance import adjust_balance, find_balance


def test_find_balance():
    assert find_balance(58, 32) == 26
    assert find_balance(44, 7) == 37


def test_adjust_balance():
    assert adjust_balance(32) == 18480
    assert adjust_balance(52) == 48230
