from length_balance import bound_length, limit_balance


def test_bound_length():
    assert bound_length([50, 23, 59, 61, 32], 32) == 4
    assert bound_length([49, 50, 46], 46) == 3


def test_limit_balance():
    assert limit_balance([38, 17, 47, 31]) == 47
    assert limit_balance([19, 7, 47, 17]) == 47
