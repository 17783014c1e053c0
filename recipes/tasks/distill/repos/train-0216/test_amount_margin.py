from amount_margin import score_amount, shift_margin


def test_score_amount():
    assert score_amount(20) == 420
    assert score_amount(59) == 3540


def test_shift_margin():
    assert shift_margin(28, 43, 50) == 43
    assert shift_margin(32, 7, 16) == 16
