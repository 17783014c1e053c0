from stock_distance import grow_distance, sum_stock


def test_sum_stock():
    assert sum_stock([25, 26, 25], 25) == 3
    assert sum_stock([59, 4, 5, 32, 40], 59) == 1


def test_grow_distance():
    assert grow_distance(23, 2, 22) == 22
    assert grow_distance(17, 44, 53) == 44
