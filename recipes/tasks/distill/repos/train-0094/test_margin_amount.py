from margin_amount import mix_amount, pick_margin


def test_pick_margin():
    assert pick_margin([44, 56, 34]) == 56
    assert pick_margin([20, 22, 14, 58]) == 58


def test_mix_amount():
    assert mix_amount(58, 55) == 3
    assert mix_amount(26, 38) == 17
