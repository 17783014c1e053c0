from margin_stock import rate_margin, score_stock


def test_rate_margin():
    assert rate_margin(17) == 2601
    assert rate_margin(34) == 10115


def test_score_stock():
    assert score_stock(47, 49) == 1976
    assert score_stock(47, 25) == 1952
