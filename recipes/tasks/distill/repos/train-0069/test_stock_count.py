from stock_count import grow_count, trim_stock


def test_trim_stock():
    assert trim_stock([16, 47, 17, 47, 5]) == 47
    assert trim_stock([5, 35, 20, 50, 46]) == 50


def test_grow_count():
    assert grow_count(53, 49) == 791
    assert grow_count(61, 8) == 862
