from amount_budget import count_amount, score_budget


def test_count_amount():
    assert count_amount(49) == 9800
    assert count_amount(35) == 5040


def test_score_budget():
    assert score_budget(49, 22, 55) == 49
    assert score_budget(26, 17, 19) == 19
