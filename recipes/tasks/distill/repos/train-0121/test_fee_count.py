from fee_count import mix_count, score_fee


def test_score_fee():
    assert score_fee(31, 34) == 50
    assert score_fee(53, 4) == 49


def test_mix_count():
    assert mix_count([13, 2, 26, 19]) == 26
    assert mix_count([50, 59, 16, 7, 56]) == 59
