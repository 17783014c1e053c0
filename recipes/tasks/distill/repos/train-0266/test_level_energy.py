from level_energy import find_energy, shift_level


def test_shift_level():
    assert shift_level(35, 40) == 390
    assert shift_level(26, 50) == 310


def test_find_energy():
    assert find_energy(20, 55) == 32
    assert find_energy(22, 7) == 15
