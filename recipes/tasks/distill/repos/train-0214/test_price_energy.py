from price_energy import bound_price, get_energy


def test_bound_price():
    assert bound_price(41) == 16359
    assert bound_price(5) == 285


def test_get_energy():
    assert get_energy(32, 25, 29) == 29
    assert get_energy(19, 49, 59) == 49
