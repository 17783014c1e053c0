from energy_stock import get_energy, limit_stock


def test_get_energy():
    assert get_energy([19, 37, 5, 14]) == 37
    assert get_energy([61, 5, 58, 23]) == 61


def test_limit_stock():
    assert limit_stock(58) == 83839
    assert limit_stock(43) == 46354
