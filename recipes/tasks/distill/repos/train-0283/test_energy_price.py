from energy_price import shift_energy, shift_price


def test_shift_energy():
    assert shift_energy(8, 37) == 149
    assert shift_energy(41, 28) == 884


def test_shift_price():
    assert shift_price(50, 20) == 1570
    assert shift_price(41, 55) == 1326
