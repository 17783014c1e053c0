from stock_level import rate_level, shift_stock


def test_shift_stock():
    assert shift_stock([34, 55, 23]) == 55
    assert shift_stock([61, 49, 40, 20, 19]) == 61


def test_rate_level():
    assert rate_level([34, 19, 35, 22]) == 35
    assert rate_level([59, 22, 53]) == 59
