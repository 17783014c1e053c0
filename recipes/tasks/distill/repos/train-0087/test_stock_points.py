from stock_points import get_points, mix_stock


def test_mix_stock():
    assert mix_stock(40) == 8200
    assert mix_stock(44) == 9900


def test_get_points():
    assert get_points(40) == 18040
    assert get_points(20) == 4620
