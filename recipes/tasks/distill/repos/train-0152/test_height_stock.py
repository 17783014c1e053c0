from height_stock import find_height, limit_stock


def test_find_height():
    assert find_height(23, 23) == 0
    assert find_height(16, 17) == 7


def test_limit_stock():
    assert limit_stock([29, 26, 52, 7]) == 52
    assert limit_stock([44, 59, 19, 41, 40]) == 59
