from balance_amount import adjust_amount, make_balance


def test_make_balance():
    assert make_balance(50, 2, 19) == 19
    assert make_balance(34, 22, 28) == 28


def test_adjust_amount():
    assert adjust_amount(52, 13, 34) == 34
    assert adjust_amount(50, 26, 37) == 37
