from budget_length import merge_length, shift_budget


def test_shift_budget():
    assert shift_budget([38, 8, 10, 29, 23], 29) == 2
    assert shift_budget([10, 16, 37, 59, 22], 22) == 3


def test_merge_length():
    assert merge_length(32, 11, 37) == 32
    assert merge_length(38, 17, 43) == 38
