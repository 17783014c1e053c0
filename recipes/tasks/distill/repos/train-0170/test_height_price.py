from height_price import rate_height, score_price


def test_rate_height():
    assert rate_height(26, 43, 61) == 43
    assert rate_height(58, 41, 61) == 58


def test_score_price():
    assert score_price(32, 41, 46) == 41
    assert score_price(47, 4, 49) == 47
