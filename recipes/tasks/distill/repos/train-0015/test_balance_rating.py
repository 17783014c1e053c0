from balance_rating import score_rating, shift_balance


def test_shift_balance():
    assert shift_balance(50, 16) == 2516
    assert shift_balance(43, 25) == 2175


def test_score_rating():
    assert score_rating(49, 40) == 1118
    assert score_rating(41, 47) == 949
