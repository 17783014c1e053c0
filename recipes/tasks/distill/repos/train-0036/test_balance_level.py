from balance_level import find_level, shift_balance


def test_shift_balance():
    assert shift_balance(32, 34) == 23
    assert shift_balance(34, 26) == 8


def test_find_level():
    assert find_level(43, 43) == 860
    assert find_level(28, 41) == 573
