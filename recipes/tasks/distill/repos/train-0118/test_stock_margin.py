from stock_margin import bound_margin, mix_stock


def test_mix_stock():
    assert mix_stock([44, 41, 10, 38], 41) == 2
    assert mix_stock([23, 58, 11], 11) == 3


def test_bound_margin():
    assert bound_margin(32, 56) == 61
    assert bound_margin(8, 58) == 61
