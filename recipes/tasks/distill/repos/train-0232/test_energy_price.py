from energy_price import count_price, get_energy


def test_get_energy():
    assert get_energy(47) == 45120
    assert get_energy(29) == 17400


def test_count_price():
    assert count_price(26) == 20709
    assert count_price(2) == 177
