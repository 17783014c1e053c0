from fee_weight import pick_fee, score_weight


def test_pick_fee():
    assert pick_fee([34, 28, 5, 56, 22], 28) == 3
    assert pick_fee([7, 2, 61, 53, 46], 2) == 5


def test_score_weight():
    assert score_weight(59, 19) == 40
    assert score_weight(50, 22) == 28
