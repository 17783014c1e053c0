from price_count import score_count, shift_price


def test_shift_price():
    assert shift_price(31, 29, 47) == 31
    assert shift_price(37, 14, 29) == 29


def test_score_count():
    assert score_count(43, 13, 23) == 23
    assert score_count(23, 13, 43) == 23
