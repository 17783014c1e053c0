from level_balance import find_level, shift_balance


def test_find_level():
    assert find_level(20, 25) == 585
    assert find_level(14, 17) == 409


def test_shift_balance():
    assert shift_balance(35, 53, 55) == 53
    assert shift_balance(34, 31, 43) == 34
