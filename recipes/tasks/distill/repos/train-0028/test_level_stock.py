from level_stock import adjust_stock, count_level


def test_count_level():
    assert count_level([43, 41, 50, 52], 41) == 4
    assert count_level([58, 17, 25], 17) == 3


def test_adjust_stock():
    assert adjust_stock(29, 5) == 1078
    assert adjust_stock(61, 13) == 2270
